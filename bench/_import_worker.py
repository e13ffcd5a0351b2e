"""The import benchmark's worker: one timed run, as a script with the measured code first on
``PYTHONPATH``.

    PYTHONPATH=<checkout> python -P bench/_import_worker.py KIND CORPUS FOLDER > result.json

It imports nothing of ``bench`` (the benchmark measures another checkout's code beside this
one, whose ``bench`` differs), and runs in a process of its own, so no run inherits another's
warm caches. ``KIND``:

- ``plain``, ``encrypted``: ``import_frames`` (what ``backscroll import`` calls) of every line
  of ``CORPUS`` into a new store in ``FOLDER`` (default config, so redaction runs; with
  ``encrypt_text`` on for ``encrypted``, the key in the file store), timed from the call until
  it returns: the frames appended and fsynced, and the views caught up.
- ``bare``: the ceiling: the same rows as ``FrameCaptured`` events turned into the search
  view's documents (``projector.schema.frame_document``) before the clock starts, then
  indexed by one Tantivy writer (``WRITER_HEAP``, ``WRITER_THREADS``) into one index with our
  schema and analyzer, committed once at the end.

Prints ``{"frames", "wall", "cpu"}``: seconds of wall time and of CPU (every thread of the
process, Tantivy's included).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path


def import_run(corpus: Path, home: Path, encrypted: bool) -> Callable[[], int]:
    """The store made and configured; the import itself, to run on the clock."""
    from backscroll.importer import import_frames
    from backscroll.store import MemoryStore

    os.environ["BACKSCROLL_KEYSTORE"] = "file"
    store = MemoryStore(home, write=True)
    # Nothing may expire: the corpus's frames lie in the past days.
    store.set_config(retention_days=36_500, storage_cap_mb=1_000_000, encrypt_text=encrypted)
    if encrypted:
        store.ensure_crypto()  # the key is made before the clock starts, as a store has one

    def run() -> int:
        with open(corpus, encoding="utf-8") as lines:
            return import_frames(store, lines).imported

    return run


def bare_documents(corpus: Path) -> list[object]:
    from eventlog.events import FrameCaptured
    from projector.schema import build_schema, frame_document

    schema = build_schema()
    documents = []
    with open(corpus, encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            row = json.loads(line)
            frame = FrameCaptured(
                ts_us=0,
                frame_id=number,
                captured_us=int(row["ts"] * 1_000_000),
                app=row["app"],
                title=row["title"],
                text=row["text"],
                text_source=row.get("text_source", "ocr"),
                reason="import",
            )
            documents.append(frame_document(frame, schema))
    return documents


def bare_run(corpus: Path, folder: Path) -> Callable[[], int]:
    """The documents built; their indexing, to run on the clock."""
    from base.fs import ensure_dir
    from projector.index import open_index
    from projector.indexer import WRITER_HEAP, WRITER_THREADS
    from projector.schema import build_schema

    documents = bare_documents(corpus)
    index = open_index(ensure_dir(folder), build_schema())

    def run() -> int:
        writer = index.writer(WRITER_HEAP, WRITER_THREADS)
        for document in documents:
            writer.add_document(document)
        writer.commit()
        writer.wait_merging_threads()
        return len(documents)

    return run


def main() -> None:
    kind, corpus, folder = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if kind == "bare":
        run = bare_run(corpus, folder)
    else:
        run = import_run(corpus, folder, encrypted=kind == "encrypted")
    wall, cpu = time.perf_counter(), time.process_time()
    frames = run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    json.dump({"frames": frames, "wall": wall, "cpu": cpu}, sys.stdout)


if __name__ == "__main__":
    main()
