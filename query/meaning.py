"""Search by meaning, and its fusion with the words.

A question is embedded by the model (``projector.embedder``, loaded by the first question
that needs it in a process and kept), and compared with every passage the meaning view holds
for the months of the span (``projector.vectors``). A frame scores its best passage; below
``CUTOFF`` it is no hit at all.

Fusion is reciprocal rank fusion (k = 60, as Pensieve does) of two lists: the frames with
every word of the query (the exact matches only) and the frames by meaning. Never the near
misses: fused with them, paraphrased questions fell from 19/20 to 6/20 in the top 5 (issue
26), since a near miss matches "the" or "for". The best exact match keeps the first place:
a screen that holds the typed words stays first, whatever the meaning says.

A process that would load the model for one question (the command line) first asks one that
keeps it loaded (the daemon, ``ask``), which runs ``hits`` on the same view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from projector.vectors import CUTOFF, MeaningHit, MeaningView
from query._queries import TimeSpan, months, utc_us

if TYPE_CHECKING:
    import numpy as np

__all__ = ["RRF_K", "Ask", "Asked", "By", "Meaning", "fuse"]

By = Literal["both", "words", "meaning"]
RRF_K = 60

Asked = tuple[list[MeaningHit], dict[str, str]]
"""The frames by meaning as another process found them, and the chunks it could not read
(``MeaningView.unreadable``)."""
Ask = Callable[[str, TimeSpan], Asked | None]


class Meaning:
    """The meaning view and the model that embeds a question."""

    def __init__(
        self,
        view: MeaningView,
        embed: Callable[[str], np.ndarray] | None = None,
        ask: Ask | None = None,
    ) -> None:
        self.view = view
        self._embed = embed
        self.ask = ask
        """Asked first for ``hits``; where it answers None, they are found here."""

    def hits(self, query: str, span: TimeSpan) -> list[MeaningHit]:
        """The frames of ``span`` whose best passage scores ``CUTOFF`` or more, best first."""
        if not self.view.manifest().months:
            return []  # nothing embedded: the model is not even loaded
        if self.ask is not None:
            asked = self.ask(query, span)
            if asked is not None:
                hits, self.view.unreadable = asked
                return hits
        vector = self.embed(query)
        first, last = months(span)
        start = utc_us(span.start) if span.start else None
        end = utc_us(span.end) if span.end else None
        return self.view.search(vector, first, last, start, end, CUTOFF)

    def embed(self, query: str) -> np.ndarray:
        if self._embed is None:
            from projector.embedder import embedder

            self._embed = embedder().query
        return self._embed(query)


def fuse(words: list[int], meaning: list[int]) -> list[tuple[int, float]]:
    """Frame ids of both lists (each best first) by reciprocal rank fusion, best first, with
    their fused scores; the first of ``words`` stays first."""
    scores: dict[int, float] = {}
    for ranked in (words, meaning):
        for rank, frame in enumerate(ranked, 1):
            scores[frame] = scores.get(frame, 0.0) + 1.0 / (RRF_K + rank)
    order = sorted(scores, key=lambda f: (-scores[f], -f))
    if words and order[0] != words[0]:
        order.remove(words[0])
        order.insert(0, words[0])
    return [(frame, scores[frame]) for frame in order]
