"""Replacing segment files crash-safely: stage the new files, commit, then install.

The commit point is the rename of the ``COMPACT`` manifest into place. Before it, a crash
leaves the old set (the staged files are removed); after it, the new one (the next lock
holder finishes the install). Sealing a segment and compaction both go through here.
"""

from __future__ import annotations

import json
from pathlib import Path

from base import jsontext
from base.fs import FileSystem
from eventlog._warn import warn
from eventlog.folder import MANIFEST_NAME, NEW_SUFFIX, segment_files
from eventlog.format import parse_segment_name
from eventlog.segment import write_file


def swap(fs: FileSystem, folder: Path, install: dict[str, bytes], remove: list[str]) -> None:
    """Write the new files, commit by writing the manifest, then rename and delete."""
    for name, data in install.items():
        write_file(fs, folder / (name + NEW_SUFFIX), data)
    # The new files' names must be durable before the commit point: a filesystem that does
    # not order folder changes could otherwise keep the manifest and lose a new file.
    fs.fsync_dir(folder)
    manifest = json.dumps({"install": sorted(install), "remove": sorted(remove)}).encode()
    tmp = folder / (MANIFEST_NAME + NEW_SUFFIX)
    write_file(fs, tmp, manifest)
    fs.rename(tmp, folder / MANIFEST_NAME)
    fs.fsync_dir(folder)
    _finish(fs, folder)


def recover(fs: FileSystem, folder: Path) -> None:
    """Finish a swap that committed, undo one that did not (the lock holder's first step)."""
    if (folder / MANIFEST_NAME).exists():
        warn(__name__, "event log: finishing an interrupted compaction")
        _finish(fs, folder)
    stray = _staged(folder)
    for path in stray:
        fs.remove(path)
    if stray:
        fs.fsync_dir(folder)
        warn(__name__, "event log: undid an interrupted compaction (%d files)", len(stray))


def _finish(fs: FileSystem, folder: Path) -> None:
    manifest = folder / MANIFEST_NAME
    try:
        plan = jsontext.parse(manifest.read_bytes())
        install, remove = list(plan["install"]), list(plan["remove"])
    except (ValueError, TypeError, KeyError):
        # The manifest exists only once the compaction committed, so finish it: install
        # every staged file, and remove what a swap removes, an active segment whose
        # sealed form is installed.
        staged = (p.name.removesuffix(NEW_SUFFIX) for p in _staged(folder))
        install = [name for name in staged if parse_segment_name(name)]
        sealed = {parse_segment_name(name) for name in install}
        remove = [
            s.path.name for s in segment_files(folder) if not s.sealed and (s.base, True) in sealed
        ]
        warn(__name__, "event log: the compaction manifest is damaged; finished from the files")
    for name in install:
        staged = folder / (name + NEW_SUFFIX)
        if staged.exists():
            fs.rename(staged, folder / name)
    for name in remove:
        if name not in install:
            fs.remove(folder / name)
    fs.fsync_dir(folder)
    fs.remove(manifest)
    fs.fsync_dir(folder)


def _staged(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.endswith(NEW_SUFFIX)]
