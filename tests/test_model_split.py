"""The model's split form, written at install: the pinned bytes from the pinned original,
written once, and nothing left behind when the original is not the one pinned."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest

from base.errors import StoreError
from projector import model_split
from projector.embedder import (
    GRAPH_FILE,
    GRAPH_SHA256,
    MODEL_FILE,
    WEIGHTS_FILE,
    WEIGHTS_SHA256,
    model_folder,
)

installed = model_folder()
pytestmark = [
    pytest.mark.skipif(
        installed is None or not (installed / MODEL_FILE).is_file(),
        reason="the meaning model's package is not installed",
    ),
    pytest.mark.skipif(
        not (model_split.TOOL / "onnx").is_dir(), reason="make venv installs onnx aside"
    ),
]


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model package folder holding only the installed original (a link to it), and onnx
    where `make venv` installs it."""
    assert installed is not None
    monkeypatch.syspath_prepend(str(model_split.TOOL))
    (tmp_path / "resources").mkdir()
    (tmp_path / MODEL_FILE).symlink_to(installed / MODEL_FILE)
    return tmp_path


def _sha256(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def test_the_split_form_has_the_pinned_bytes_and_is_written_once(package: Path) -> None:
    assert model_split.split(package)
    assert _sha256(package / GRAPH_FILE) == GRAPH_SHA256
    assert _sha256(package / WEIGHTS_FILE) == WEIGHTS_SHA256
    for name in (GRAPH_FILE, WEIGHTS_FILE):
        assert stat.S_IMODE((package / name).stat().st_mode) == 0o644
    written = (package / WEIGHTS_FILE).stat().st_mtime_ns
    assert not model_split.split(package)
    assert (package / WEIGHTS_FILE).stat().st_mtime_ns == written
    assert sorted(p.name for p in (package / "resources").iterdir()) == sorted(
        [MODEL_FILE.name, GRAPH_FILE.name, WEIGHTS_FILE.name]
    )


def test_a_damaged_split_file_is_written_again(package: Path) -> None:
    model_split.split(package)
    (package / GRAPH_FILE).write_bytes(b"not a graph")
    assert model_split.split(package)
    assert _sha256(package / GRAPH_FILE) == GRAPH_SHA256


def test_an_original_that_is_not_the_one_pinned_writes_nothing(
    package: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    original = (package / MODEL_FILE).read_bytes()
    (package / MODEL_FILE).unlink()
    (package / MODEL_FILE).write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    with pytest.raises(StoreError, match=r"is not the one pinned: reinstall it$"):
        model_split.split(package)
    assert [p.name for p in (package / "resources").iterdir()] == [MODEL_FILE.name]
    monkeypatch.setattr(model_split, "model_folder", lambda: package)
    with pytest.raises(SystemExit) as exit_:
        model_split.main()
    assert str(exit_.value).startswith("backscroll: the meaning model's file ")
    assert "\n" not in str(exit_.value)
