"""The search view as it lies on disk, shared by its writer and its readers: the manifest
that lists each month's live partition, and how a partition is opened."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from base.fs import write_atomic
from projector.schema import SCHEMA_VERSION, build_schema, register_analyzers

if TYPE_CHECKING:
    import tantivy

MANIFEST = "manifest.json"


class Manifest(msgspec.Struct):
    """``position``: the last log offset whose effects are committed; ``applying_upto``: the
    last offset a commit in progress may already have added; ``partitions``: month → folder."""

    schema: int = SCHEMA_VERSION
    position: int = -1
    applying_upto: int = -1
    partitions: dict[str, str] = {}

    @classmethod
    def load(cls, root: Path) -> Manifest | None:
        try:
            return msgspec.json.decode((root / MANIFEST).read_bytes(), type=cls)
        except (FileNotFoundError, msgspec.DecodeError):
            return None  # missing or damaged: the view is rebuilt from the log

    def save(self, root: Path) -> None:
        self.partitions = dict(sorted(self.partitions.items()))
        write_atomic(root / MANIFEST, msgspec.json.encode(self))


def open_index(path: Path, schema: tantivy.Schema | None = None) -> tantivy.Index:
    import tantivy

    index = tantivy.Index(schema or build_schema(), path=str(path), reuse=True)
    register_analyzers(index)
    return index
