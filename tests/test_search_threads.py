"""The months of a search are searched on this thread and one more, each taking the next
month when it is done (``query.search._on_threads``)."""

from __future__ import annotations

import threading

import pytest

from query.search import SEARCH_THREADS, _on_threads


def test_every_item_is_done_once_and_answered_in_order() -> None:
    names: set[str] = set()

    def work(item: int) -> int:
        names.add(threading.current_thread().name)
        return item * 10

    assert _on_threads(work, list(range(40))) == [i * 10 for i in range(40)]
    assert len(names) <= SEARCH_THREADS


def test_an_exception_in_any_thread_is_raised_to_the_caller() -> None:
    def work(item: int) -> int:
        if item == 7:
            raise RuntimeError("month 7")
        return item

    with pytest.raises(RuntimeError, match="month 7"):
        _on_threads(work, list(range(20)))


def test_the_helper_threads_are_gone_when_it_returns() -> None:
    before = threading.active_count()
    _on_threads(lambda item: item, list(range(8)))
    assert threading.active_count() == before
