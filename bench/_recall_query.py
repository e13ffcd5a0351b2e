"""The recall benchmark's reader: run as a script with the measured code on PYTHONPATH.

    PYTHONPATH=<checkout> python bench/_recall_query.py < jobs.json > answers.json

It imports nothing of ``bench`` (the benchmark may measure another checkout's code, whose
``bench`` differs) and only the public API ``backscroll search`` itself calls:
``MemoryStore.search`` (the CLI's ``search`` is that call plus rendering), ``timeline``
and ``get``. Input: ``{"home", "start_us", "end_us", "jobs": [{"start_us", "end_us",
"terms"}]}``; a term is a word or a two-word phrase, searched as ``word`` or ``"a b"``.
Output: every frame of the span (id, time, app, title, text source, reason, text), and for
each job and term the ids of the frames returned as exact hits (near misses, the any-term
retry, are left out); hits a fuzzy search marked (``fuzzy`` on a hit, when search has it)
are listed apart, so the report can show recall with and without them.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any

from backscroll import MemoryStore

LIMIT = 1000  # the CLI's maximum: a job's span holds a few frames, never this many


def when(us: int) -> datetime:
    return datetime.fromtimestamp(us / 1e6, tz=UTC)


def main() -> None:
    request = json.load(sys.stdin)
    out: dict[str, Any] = {"frames": [], "jobs": []}
    with MemoryStore(request["home"]) as store:
        start, end = when(request["start_us"]), when(request["end_us"])
        for hit in store.timeline(start=start, end=end, limit=100_000):
            text = store.get(hit.id).text or ""
            out["frames"].append(
                {
                    "id": hit.id,
                    "ts": hit.when.timestamp(),
                    "app": hit.app,
                    "title": hit.title,
                    "source": hit.text_source,
                    "reason": hit.reason,
                    "text": text,
                }
            )
        for job in request["jobs"]:
            span = {"start": when(job["start_us"]), "end": when(job["end_us"])}
            exact, fuzzy = [], []
            for term in job["terms"]:
                query = f'"{term}"' if " " in term else term
                hits = [h for h in store.search(query, **span, limit=LIMIT) if not h.near_miss]
                exact.append([h.id for h in hits if not getattr(h, "fuzzy", False)])
                fuzzy.append([h.id for h in hits if getattr(h, "fuzzy", False)])
            out["jobs"].append({"exact": exact, "fuzzy": fuzzy})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
