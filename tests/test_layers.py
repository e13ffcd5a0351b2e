"""The import contract in pyproject.toml holds, and it is not a contract that cannot fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGES = (
    "base",
    "eventlog",
    "projector",
    "capture",
    "query",
    "backscroll",
    "headless",
    "bench",
    "tests",
)
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the library packages, so a test can add a module that breaks a layer."""
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    return tmp_path


def test_the_layers_of_the_tree_are_kept(tree: Path) -> None:
    result = _lint(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.slow  # a lint of a copy of the tree for each edge
@pytest.mark.parametrize(
    ("module", "source", "contract"),
    [
        # A function-level import is still an import: the log must never look up at the app.
        ("eventlog/_back_edge.py", "def f():\n    from backscroll import store\n", "Layers"),
        ("base/_back_edge.py", "from eventlog import events\n", "Layers"),
        ("capture/_back_edge.py", "from eventlog.log import Log\n", "Capture"),
        ("query/_back_edge.py", "from projector.indexer import SearchWriter\n", "Queries"),
        ("capture/_sibling.py", "def f():\n    import query.render\n", "Layers"),
        ("bench/_back_edge.py", "from tests.desktop import Desktop\n", "Benchmarks"),
        # The rigs are equipment: only the demo, and bench/ and tests/, may import them.
        ("capture/_back_edge.py", "def f():\n    import headless.x11\n", "desktop rigs"),
        ("backscroll/_back_edge.py", "from headless import DesktopError\n", "desktop rigs"),
        ("base/_back_edge.py", "import headless\n", "desktop rigs"),
        ("headless/_back_edge.py", "from tests.desktop import Desktop\n", "desktop rigs"),
    ],
)
def test_a_back_edge_breaks_the_contract(
    tree: Path, module: str, source: str, contract: str
) -> None:
    (tree / module).write_text(source)
    result = _lint(tree)
    assert result.returncode != 0
    assert f"{contract}" in result.stdout and "BROKEN" in result.stdout
    assert module.removesuffix(".py").replace("/", ".") in result.stdout


def test_importing_the_log_loads_nothing_of_the_app() -> None:
    probe = "import eventlog, sys; print(sorted({m.split('.')[0] for m in sys.modules}))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout
    for above in ("backscroll", "projector", "query", "capture"):
        assert f"'{above}'" not in loaded
    assert "'base'" in loaded


def test_importing_backscroll_or_its_cli_loads_no_desktop_rig() -> None:
    # What `python -X importtime -c "import backscroll"` lists is every module it loaded.
    for statement in ("import backscroll", "import backscroll.cli", "import backscroll.demo"):
        run = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", statement],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        loaded = [line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()]
        assert statement.split()[-1] in loaded  # the listing was read
        assert [m for m in loaded if m.split(".")[0] == "headless"] == [], statement


def test_capture_is_forbidden_every_module_of_the_log_but_the_event_types() -> None:
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (capture,) = [c for c in config["contracts"] if c.get("source_modules") == ["capture"]]
    modules = {f"eventlog.{p.stem}" for p in (REPO / "eventlog").glob("*.py")}
    assert modules - set(capture["forbidden_modules"]) == {"eventlog.__init__", "eventlog.events"}


def test_a_module_cycle_inside_a_package_breaks_the_contract(tree: Path) -> None:
    # The shape of the old store <-> status cycle: each hid its import inside a function.
    (tree / "backscroll" / "_ping.py").write_text("def f():\n    from backscroll import _pong\n")
    (tree / "backscroll" / "_pong.py").write_text("def g():\n    from backscroll import _ping\n")
    result = _lint(tree)
    assert result.returncode != 0
    assert "No module cycles inside a package BROKEN" in result.stdout


def test_what_make_install_test_and_run_read_names_nothing_outside_the_clone() -> None:
    # The peer data the tests use is copied into tests/data; only bench/ may read ../shared.
    outside = ("../shared", "shared/", "REPO.parent", "parents[1].parent", '"shared"', "'shared'")
    files = [REPO / "Makefile", REPO / ".ci" / "run", *sorted((REPO / "tests").glob("*.py"))]
    found = [
        f"{path.name}: {line.strip()}"
        for path in files
        if path.name != "test_layers.py"
        for line in path.read_text().splitlines()
        if any(mark in line for mark in outside)
    ]
    assert found == []
