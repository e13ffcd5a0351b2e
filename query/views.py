"""Read-only access to the views: the search partitions and the state, as other processes
committed them. Nothing here takes a lock or writes under the home."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from base.home import Layout
from projector.index import Manifest, open_to_read
from projector.state import State

if TYPE_CHECKING:
    import tantivy

    from eventlog.events import Event


class ViewReader:
    def __init__(self, home: Path) -> None:
        self.layout = Layout(home)
        self._manifest_mtime = -1
        self._manifest: Manifest | None = None
        self._indexes: dict[str, tantivy.Index] = {}
        self._meta_mtimes: dict[str, int] = {}
        self.controls: list[tuple[int, Event]] = []
        """Control events (deletions, pauses, config changes) past the committed state, that
        ``state`` applies: where the views trail the log and nothing may catch them up (a
        reader), a tombstone still hides its frames at once."""

    def manifest(self) -> Manifest | None:
        try:
            mtime = (self.layout.search / "manifest.json").stat().st_mtime_ns
        except FileNotFoundError:
            return None
        if mtime != self._manifest_mtime:
            self._manifest = Manifest.load(self.layout.search)
            self._manifest_mtime = mtime
        return self._manifest

    def partitions(self, lo: str | None = None, hi: str | None = None) -> list[tantivy.Index]:
        """Indexes of the months in [lo, hi] (inclusive month keys), oldest first, opened
        again when another process has committed to them since the last call."""
        manifest = self.manifest()
        if manifest is None:
            return []
        out = []
        for month, name in sorted(manifest.partitions.items()):
            if (lo and month < lo) or (hi and month > hi):
                continue
            try:
                # A commit rewrites meta.json: open again only then (0.3 ms a month otherwise).
                mtime = (self.layout.search / name / "meta.json").stat().st_mtime_ns
                index = self._indexes.get(name)
                if index is None or mtime != self._meta_mtimes.get(name):
                    index = self._indexes[name] = open_to_read(self.layout.search / name)
            except (OSError, ValueError):
                continue  # gone or damaged: the views' writer rebuilds it
            self._meta_mtimes[name] = mtime
            out.append(index)
        return out

    def state(self) -> State:
        state = State.load(self.layout.views) or State()
        for offset, event in self.controls:
            if offset > state.position:
                state.apply(offset, event)
        return state
