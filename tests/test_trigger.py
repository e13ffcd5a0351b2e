"""The capture trigger against the spec's table, on a clock the test moves."""

from __future__ import annotations

from capture.trigger import Trigger, letters


def started(**kwargs: object) -> Trigger:
    trigger = Trigger(**kwargs)  # type: ignore[arg-type]
    assert trigger.due(0.0, "Terminal", "bash", 1) == "start"
    trigger.done(0.0, "Terminal", "bash", True, 1)
    return trigger


def test_an_app_switch_is_captured_once_the_debounce_allows() -> None:
    trigger = started()
    assert trigger.due(1.0, "Firefox", "Inbox", 2) is None  # within min_interval
    assert trigger.due(2.0, "Firefox", "Inbox", 2) == "app_change"


def test_a_title_change_counts_its_letters_only() -> None:
    trigger = started()
    assert trigger.due(3.0, "Terminal", "bash (3) 45%", 1) is None
    assert trigger.due(3.0, "Terminal", "vim notes.md", 1) == "title_change"
    assert letters("◐ Build 12:04") == letters("◑ Build 12:05") == "build"


def test_another_window_with_the_same_app_and_title_is_a_change() -> None:
    trigger = started()
    assert trigger.due(3.0, "Terminal", "bash", 1) is None
    assert trigger.due(3.0, "Terminal", "bash", 2) == "title_change"
    trigger.done(3.0, "Terminal", "bash", True, 2)
    assert trigger.due(6.0, "Terminal", "bash", 2) is None
    assert trigger.due(6.0, "Terminal", "bash", 1) == "title_change"


def test_an_unchanged_window_is_taken_again_after_the_interval() -> None:
    trigger = started(interval=30.0)
    assert trigger.due(29.0, "Terminal", "bash", 1) is None
    assert trigger.due(30.0, "Terminal", "bash", 1) == "interval"


def test_a_failed_capture_is_retried_when_next_allowed() -> None:
    trigger = started()
    assert trigger.due(3.0, "Firefox", "Inbox", 2) == "app_change"
    trigger.done(3.0, "Firefox", "Inbox", True, 2)
    trigger.failed("app_change")
    assert trigger.due(4.0, "Firefox", "Inbox", 2) is None
    assert trigger.due(5.0, "Firefox", "Inbox", 2) == "app_change"


def test_interval_mode_ignores_switches_between_intervals() -> None:
    trigger = started(mode="interval", interval=10.0, min_interval=0.0)
    assert trigger.due(5.0, "Firefox", "Inbox", 2) is None
    assert trigger.due(10.0, "Firefox", "Inbox", 2) == "interval"
