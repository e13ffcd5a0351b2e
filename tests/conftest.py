from __future__ import annotations

from pathlib import Path

import pytest

from tests.desktop import desktop  # noqa: F401  (the session's headless desktop)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def backscroll_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test touches the real home: every test gets a private, empty store folder."""
    home = tmp_path / "home"
    monkeypatch.setenv("BACKSCROLL_HOME", str(home))
    monkeypatch.delenv("BACKSCROLL_KEYSTORE", raising=False)
    return home
