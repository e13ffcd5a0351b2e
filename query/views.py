"""Read-only access to the views: the search partitions and the state, as other processes
committed them. Nothing here takes a lock or writes under the home.

A view file that does not read (a month's index that does not open or breaks a read, the
manifest, the state) is noted in ``damaged`` instead of being passed over in silence: the
answers built from the rest say they are incomplete, and which command rebuilds the views.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from base import jsontext
from base.home import Layout
from projector.index import MANIFEST, REBUILD, Manifest, broken, damage, open_to_read
from projector.state import STATE_FILE, State

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
        self.damaged: dict[str, str] = {}
        """The views met damaged since this reader opened: what ("the search view of
        2026-10") → why."""

    def manifest(self) -> Manifest | None:
        path = self.layout.search / MANIFEST
        try:
            mtime = path.stat().st_mtime_ns
        except FileNotFoundError:
            return None
        if mtime != self._manifest_mtime:
            try:
                self._manifest = jsontext.decode(path.read_bytes(), Manifest)
                self.damaged.pop(MANIFEST_VIEW, None)
            except (OSError, msgspec.DecodeError) as exc:
                self.damaged[MANIFEST_VIEW] = _why(exc)
                self._manifest = None
            self._manifest_mtime = mtime
        return self._manifest

    def partitions(self, lo: str | None = None, hi: str | None = None) -> list[tantivy.Index]:
        """Indexes of the months in [lo, hi] (inclusive month keys), oldest first, opened
        again when another process has committed to them since the last call. A month that
        does not open is left out and noted in ``damaged``."""
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
                    self.damaged.pop(_month_view(name), None)  # rebuilt, or it was never
            except BaseException as exc:
                if not (isinstance(exc, OSError) or broken(exc)):
                    raise
                if isinstance(exc, FileNotFoundError) and self._switched(month, name):
                    continue  # a rebuild replaced it since the manifest was read
                self._damaged_month(name, exc)
                continue
            self._meta_mtimes[name] = mtime
            out.append(index)
        return out

    def _switched(self, month: str, name: str) -> bool:
        manifest = self.manifest()
        return manifest is None or manifest.partitions.get(month) != name

    def broke(self, index: tantivy.Index, exc: BaseException) -> None:
        """A read of ``index`` failed on its bytes: note its month as damaged."""
        for name, opened in self._indexes.items():
            if opened is index:
                self._damaged_month(name, exc)

    def _damaged_month(self, name: str, exc: BaseException) -> None:
        """Named by the file that fails its checksum where one does (Tantivy's own messages
        run to several lines of its internals)."""
        try:
            why = damage(self.layout.search / name) or _why(exc)
        except OSError as missing:
            why = _why(missing)
        self.damaged[_month_view(name)] = why

    def state(self) -> State:
        state = State.load(self.layout.views)
        if state is None and (self.layout.views / STATE_FILE).exists():
            self.damaged[STATE_VIEW] = "it does not decode"
        else:
            self.damaged.pop(STATE_VIEW, None)
        state = state or State()
        for offset, event in self.controls:
            if offset > state.position:
                state.apply(offset, event)
        return state

    def incomplete(self) -> str | None:
        """One line for an answer built while views were damaged; None when none was."""
        if not self.damaged:
            return None
        what = "; ".join(f"{view} is damaged ({why})" for view, why in self.damaged.items())
        return f"{what}; {REBUILD}"


MANIFEST_VIEW = "the search view's manifest"
STATE_VIEW = "the state view"


def _month_view(name: str) -> str:
    """How a month's partition is named to a person: by its month, not its generation."""
    return f"the search view of {name.rsplit('.g', 1)[0]}"


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return "it does not decode" if isinstance(exc, msgspec.DecodeError) else "it does not read"
