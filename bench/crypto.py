"""Encryption at rest: what sealing a frame and its blind tokens cost.

    cd /work/main && .venv/bin/python -m bench.crypto [--write]

Times ``FrameCrypto`` on 2 KB texts cut from real screen text
(``../shared/corpus/screen_corpus.py``, 300 frames, seed 1) and on 20 KB thumbnails (random
bytes: JPEG does not compress either), plus loading the key from the file store. Baselines run
on the same inputs in the same process: zstd alone (level 3, what ``encrypt_text`` adds
AES-GCM to), AES-256-GCM alone on the thumbnail, and ``tokens.words`` alone (the tokenizer
that ``blind_tokens`` hashes the output of). Prints a table in µs; ``--write`` also saves it
to ``bench/results/crypto.txt`` with the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zstandard

from backscroll.crypto import FrameCrypto
from backscroll.keys import load_key
from base.tokens import words
from bench._stats import percentile

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "screen_corpus.py"
RESULTS = REPO / "bench" / "results" / "crypto.txt"
TEXT_CHARS = 2048
THUMB_BYTES = 20_000


def timed_us(step: Callable[[Any], Any], inputs: list[Any], rounds: int) -> list[float]:
    """Microseconds per call of ``step`` over ``inputs``, ``rounds`` times, ascending."""
    for item in inputs[:10]:
        step(item)
    times = []
    for _ in range(rounds):
        for item in inputs:
            start = time.perf_counter()
            step(item)
            times.append((time.perf_counter() - start) * 1e6)
    return sorted(times)


def row(name: str, times: list[float]) -> str:
    p50, p90, p99 = (percentile(times, q) for q in (0.5, 0.9, 0.99))
    return f"{name:34s} {len(times):7d} {p50:9.1f} {p90:9.1f} {p99:9.1f} {times[-1]:9.1f}"


def corpus_texts(frames: int) -> list[str]:
    command = [sys.executable, str(CORPUS), str(frames), "--seed", "1"]
    lines = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    texts = [json.loads(line)["text"] for line in lines.splitlines() if line.strip()]
    # Frames shorter than 2 KB are repeated up to it, so every input is the size measured.
    return [(text * (TEXT_CHARS // max(1, len(text)) + 1))[:TEXT_CHARS] for text in texts if text]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"also write {RESULTS}")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    crypto = FrameCrypto(os.urandom(32))
    texts = corpus_texts(300)
    text_blobs = [crypto.encrypt_text(i, text) for i, text in enumerate(texts)]
    thumbs = [os.urandom(THUMB_BYTES) for _ in range(50)]
    thumb_blobs = [crypto.encrypt_thumb(i, thumb) for i, thumb in enumerate(thumbs)]
    distinct = sorted({len(set(words(text))) for text in texts})
    compressor = zstandard.ZstdCompressor(level=3)
    aead = AESGCM(os.urandom(32))
    nonce = os.urandom(12)

    rounds = args.rounds
    lines = [
        f"machine: nproc {os.cpu_count()}, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}",
        "",
        "$ .venv/bin/python -m bench.crypto",
        f"# {len(texts)} corpus texts of {TEXT_CHARS} chars "
        f"({percentile(distinct, 0.5)} distinct words at the median), "
        f"{len(thumbs)} thumbnails of {THUMB_BYTES} bytes",
        "",
        f"{'µs per call':34s} {'count':>7} {'p50':>9} {'p90':>9} {'p99':>9} {'max':>9}",
        row("encrypt_text 2 KB", timed_us(lambda t: crypto.encrypt_text(1, t), texts, rounds)),
        row(
            "decrypt_text 2 KB",
            timed_us(
                lambda b: crypto.decrypt_text(b[0], b[1]), list(enumerate(text_blobs)), rounds
            ),
        ),
        row(
            "  baseline: zstd-3 alone",
            timed_us(lambda t: compressor.compress(t.encode()), texts, rounds),
        ),
        row(
            "encrypt_thumb 20 KB",
            timed_us(lambda j: crypto.encrypt_thumb(1, j), thumbs, rounds * 6),
        ),
        row(
            "decrypt_thumb 20 KB",
            timed_us(
                lambda b: crypto.decrypt_thumb(b[0], b[1]), list(enumerate(thumb_blobs)), rounds * 6
            ),
        ),
        row(
            "  baseline: AES-GCM alone",
            timed_us(lambda j: aead.encrypt(nonce, j, b"aad"), thumbs, rounds * 6),
        ),
        row("blind_tokens 2 KB", timed_us(crypto.blind_tokens, texts, rounds)),
        row("  baseline: tokens.words alone", timed_us(words, texts, rounds)),
        row(
            "blind_token (one query word)", timed_us(crypto.blind_token, ["invoice"] * 300, rounds)
        ),
        row("FrameCrypto(key) (HKDF ×3)", timed_us(FrameCrypto, [os.urandom(32)] * 50, rounds)),
    ]
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        load_key(home, create=True)
        lines.append(
            row(
                "load_key, file store",
                timed_us(lambda h: load_key(h, create=False), [home] * 50, rounds),
            )
        )
    report = "\n".join(lines) + "\n"
    print(report, end="")
    if args.write:
        RESULTS.write_text(report)


if __name__ == "__main__":
    main()
