"""Each package's public names are pinned: removing one is a breaking change."""

from __future__ import annotations

import inspect
import subprocess
import sys
from types import ModuleType

import pytest

import backscroll
import base
import capture
import eventlog
import headless
import projector
import query
from tests.conftest import REPO


def _in_ruff_order(names: list[str]) -> bool:
    """ruff (RUF022) sorts ``__all__`` as isort does: CONSTANTS, then Classes, then the rest."""
    return names == sorted(names, key=lambda n: (not n.isupper(), not n[:1].isupper(), n))


def test_backscroll_exports_the_public_api() -> None:
    assert backscroll.__all__ == sorted(backscroll.__all__)
    assert backscroll.__all__ == [
        "BackscrollError",
        "Config",
        "Hit",
        "MemoryStore",
        "Redaction",
        "parse_when",
        "redact",
    ]
    for name in backscroll.__all__:
        assert getattr(backscroll, name) is not None


def test_eventlog_exports_its_log_and_events() -> None:
    assert eventlog.__all__ == sorted(eventlog.__all__)
    for name in eventlog.__all__:
        assert hasattr(eventlog, name)
    assert {"Log", "InMemoryLog", "FrameCaptured", "FramesDeleted"} <= set(eventlog.__all__)


def test_capture_exports_its_camera_backends_trigger_and_redaction_record() -> None:
    assert capture.__all__ == [
        "KINDS",
        "AxReader",
        "Backends",
        "Camera",
        "Frontmost",
        "Geometry",
        "Hotkey",
        "Likeness",
        "OcrEngine",
        "Probe",
        "Redaction",
        "Screen",
        "Seen",
        "Session",
        "TextReader",
        "Trigger",
        "VisibleWindow",
        "WlrootsProbe",
        "X11Probe",
        "backends",
        "session",
    ]


def test_query_exports_its_searcher_phrases_and_renderings() -> None:
    assert query.__all__ == [
        "ACCEPTED_FORMS",
        "Decrypt",
        "Hit",
        "Moment",
        "Moments",
        "Searcher",
        "Term",
        "TimeSpan",
        "ViewReader",
        "group_hits",
        "parse_query",
        "parse_when",
        "resolve_span",
        "search_moments",
        "search_text",
        "seen_text",
        "show_text",
        "snippet",
        "span_text",
        "stamp",
        "timeline_text",
        "utc_us",
        "why_empty",
    ]


def test_base_exports_the_names_every_layer_uses() -> None:
    assert base.__all__ == ["BackscrollError", "Config", "Layout", "now_us", "resolve_home"]


def test_projector_exports_the_writer_and_the_read_side() -> None:
    assert projector.__all__ == [
        "Deletion",
        "Manifest",
        "Progress",
        "Projector",
        "Scope",
        "State",
        "matches",
        "open_index",
    ]


def test_headless_exports_its_desktops_and_their_error() -> None:
    assert headless.__all__ == [
        "Desktop",
        "DesktopError",
        "GnomeDesktop",
        "SwayDesktop",
        "WaylandWindow",
        "Window",
        "gnome_desktop",
        "headless_desktop",
        "marked_processes",
        "processes_of",
        "sway_desktop",
        "wait_for",
    ]


@pytest.mark.parametrize(
    "package", [base, capture, projector, query, headless], ids=lambda p: p.__name__
)
def test_each_exported_name_is_sorted_and_defined_in_its_package(package: ModuleType) -> None:
    assert _in_ruff_order(package.__all__)
    for name in package.__all__:
        value = getattr(package, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__.split(".")[0] == package.__name__, (name, value.__module__)
    with pytest.raises(AttributeError):
        _ = package.not_a_name


def test_the_fronts_and_the_help_load_no_imaging_grabbing_or_index_library() -> None:
    probe = (
        "import sys, capture, query\n"
        "from backscroll.cli import main\n"
        "sys.argv = ['backscroll', '--help']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('PIL', 'mss', 'tantivy') if m in sys.modules), file=sys.stderr)"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert run.stderr.strip().splitlines()[-1] == "[]"
