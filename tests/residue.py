"""Scanning a whole store for words: raw bytes, every zstd block decompressed (in sealed
segments and in the copies of damaged blocks kept aside), and each Tantivy index asked for
the words' document frequency (which still counts soft deletes)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import zstandard

from eventlog.folder import DAMAGED_SUFFIX
from eventlog.format import BLOCK, BLOCK_MAGIC, SEALED_SUFFIX
from eventlog.segment import read_sealed
from projector.index import open_index


def readable_bytes(home: Path) -> list[tuple[str, bytes]]:
    """Every file's bytes, plus the decompressed records of each sealed segment."""
    out = []
    for root, _, files in os.walk(home):
        for name in files:
            path = Path(root, name)
            if not path.is_file():
                continue  # a running daemon's socket (run/meaning.sock): it holds no bytes
            out.append((str(path), path.read_bytes()))
            if name.endswith(SEALED_SUFFIX):
                for record in read_sealed(path):
                    out.append((f"{path}#{record.offset}", record.payload))
            if name.endswith(DAMAGED_SUFFIX):
                out.append((f"{path}#block", _damaged_block(path.read_bytes())))
    return out


def _damaged_block(data: bytes) -> bytes:
    """As much as decompresses of a damaged block kept aside: its checksum failed, but its
    data may be whole, or whole up to the damage."""
    if not data.startswith(BLOCK_MAGIC):
        return b""
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data[BLOCK.size :]))
    out = bytearray()
    try:
        while chunk := reader.read(4096):
            out += chunk
    except zstandard.ZstdError:
        pass  # the damage: what came before it is kept
    return bytes(out)


def files_containing(home: Path, word: str) -> list[str]:
    needle = word.encode()
    return [where for where, data in readable_bytes(home) if needle in data]


def index_doc_freq(home: Path, field: str, word: str) -> int:
    total = 0
    search = home / "views" / "search"
    if not search.exists():
        return 0
    for entry in search.iterdir():
        if entry.is_dir():
            total += open_index(entry).searcher().doc_freq(field, word)
    return total


def stray_segment_files(home: Path) -> list[str]:
    """Files in an index folder that its meta.json does not list."""
    import json

    stray = []
    search = home / "views" / "search"
    for entry in search.iterdir() if search.exists() else []:
        if not entry.is_dir():
            continue
        meta = json.loads((entry / "meta.json").read_text())
        live = {s["segment_id"].replace("-", "") for s in meta["segments"]}
        for file in entry.iterdir():
            stem = file.name.split(".", 1)[0]
            if len(stem) == 32 and stem not in live:
                stray.append(str(file))
    return stray
