"""Recall: search, timeline and get over the views, time expressions, and the spec's renderings.

Queries read the views as other processes committed them; they never write and never know
how the projector builds them. Public API (imported lazily, so parsing a time expression does not
load the search)::

    from query import Searcher, TimeSpan, ViewReader, parse_when
    hits = Searcher(ViewReader(home)).search("invoice", TimeSpan(*parse_when("last week")))
    moments = search_moments(Searcher(ViewReader(home)), "invoice")  # near-duplicates grouped
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from base.fronts import lazy_names

if TYPE_CHECKING:
    from query._queries import utc_us
    from query.explain import why_empty
    from query.moments import Moment, Moments, search_moments
    from query.parse import Term, parse_query
    from query.render import (
        group_hits,
        search_text,
        seen_text,
        show_text,
        span_text,
        stamp,
        timeline_text,
    )
    from query.search import Decrypt, Hit, Searcher, TimeSpan
    from query.snippets import snippet
    from query.views import ViewReader
    from query.when import ACCEPTED_FORMS, parse_when, resolve_span

__all__ = [
    "ACCEPTED_FORMS",
    "Decrypt",
    "Hit",
    "Moment",
    "Moments",
    "Searcher",
    "Term",
    "TimeSpan",
    "ViewReader",
    "group_hits",
    "parse_query",
    "parse_when",
    "resolve_span",
    "search_moments",
    "search_text",
    "seen_text",
    "show_text",
    "snippet",
    "span_text",
    "stamp",
    "timeline_text",
    "utc_us",
    "why_empty",
]

_WHERE = {
    "ACCEPTED_FORMS": "query.when",
    "Decrypt": "query.search",
    "Hit": "query.search",
    "Moment": "query.moments",
    "Moments": "query.moments",
    "Searcher": "query.search",
    "Term": "query.parse",
    "TimeSpan": "query.search",
    "ViewReader": "query.views",
    "group_hits": "query.render",
    "parse_query": "query.parse",
    "parse_when": "query.when",
    "resolve_span": "query.when",
    "search_moments": "query.moments",
    "search_text": "query.render",
    "seen_text": "query.render",
    "show_text": "query.render",
    "snippet": "query.snippets",
    "stamp": "query.render",
    "timeline_text": "query.render",
    "utc_us": "query._queries",
    "why_empty": "query.explain",
    "span_text": "query.render",
}


__getattr__ = lazy_names(__name__, _WHERE)
