"""The views, built from the log: the projector that writes them, and what readers may open.

    projector.runner, projector.indexer   the writer (only the holder of the views lock)
    projector.index, projector.schema,    the views' read side: the manifest, how a partition
    projector.state                       opens, the documents' fields, the small state views
    projector.kept                        the kept memories' view (written with the state)

Public API (imported lazily, so ``query`` can take the read side without the writer)::

    from projector import Projector, State
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from base.fronts import lazy_names

if TYPE_CHECKING:
    from projector.index import Manifest, open_index
    from projector.runner import Progress, Projector
    from projector.state import Deletion, Scope, State, matches

__all__ = [
    "Deletion",
    "Manifest",
    "Progress",
    "Projector",
    "Scope",
    "State",
    "matches",
    "open_index",
]

_WHERE = {
    "Deletion": "projector.state",
    "Manifest": "projector.index",
    "Progress": "projector.runner",
    "Projector": "projector.runner",
    "Scope": "projector.state",
    "State": "projector.state",
    "matches": "projector.state",
    "open_index": "projector.index",
}


__getattr__ = lazy_names(__name__, _WHERE)
