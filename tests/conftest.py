from __future__ import annotations

from pathlib import Path

import pytest

from tests.desktop import desktop  # noqa: F401  (the session's headless desktop)

REPO = Path(__file__).resolve().parent.parent

# What starts a desktop, a compositor or a browser: `make check` leaves out every test that
# is marked desktop, so each of these is marked desktop as well.
RIGS = ("sway", "gnome", "browser")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark desktop every test of a rig, and every test that uses a desktop fixture."""
    for item in items:
        uses_desktop = "desktop" in getattr(item, "fixturenames", ())
        if uses_desktop or any(item.get_closest_marker(rig) for rig in RIGS):
            item.add_marker(pytest.mark.desktop)


@pytest.fixture(autouse=True)
def backscroll_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test touches the real home: every test gets a private, empty store folder."""
    home = tmp_path / "home"
    monkeypatch.setenv("BACKSCROLL_HOME", str(home))
    monkeypatch.delenv("BACKSCROLL_KEYSTORE", raising=False)
    return home
