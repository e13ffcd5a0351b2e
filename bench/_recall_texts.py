"""The recall benchmark's texts, taken from this machine: man pages, dpkg's log, Debian
changelogs, Python's standard library and an HTML page built from them.

Deterministic: each source is listed in sorted order and sampled with ``random.Random(seed)``,
so the same machine and seed give the same texts. Lines are cut to the window's width and
kept to printable ASCII with tabs expanded: a terminal then shows exactly these lines, one
screen row each, so what was visible is known to the row.
"""

from __future__ import annotations

import gzip
import html
import os
import random
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

MAN_PAGES = ("ls", "cp", "grep", "tar", "find", "sed", "ssh", "less", "gzip", "chmod", "sort")
DPKG_LOG = Path("/var/log/dpkg.log")
DOCS = Path("/usr/share/doc")
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


def clean(line: str, width: int) -> str:
    """One screen row: tabs expanded, non-ASCII replaced, cut to ``width`` characters."""
    return _UNPRINTABLE.sub("?", line.expandtabs(8)).rstrip()[:width].rstrip()


def man_page(name: str, width: int) -> list[str]:
    """``man NAME`` rendered by groff -Tutf8 for ``width`` columns, overstrikes removed."""
    env = {**os.environ, "MANWIDTH": str(width), "MANPAGER": "cat", "PAGER": "cat"}
    env.pop("MAN_KEEP_FORMATTING", None)
    done = subprocess.run(
        ["sh", "-c", f"man {name} 2>/dev/null | col -bx"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return [clean(line, width) for line in done.stdout.splitlines()]


def dpkg_log(width: int) -> list[str]:
    if not DPKG_LOG.exists():
        return []
    return [clean(line, width) for line in DPKG_LOG.read_text(errors="replace").splitlines()]


def changelogs() -> list[Path]:
    return sorted(DOCS.glob("*/changelog.Debian.gz"))


def changelog(path: Path, width: int) -> list[str]:
    with gzip.open(path, "rt", errors="replace") as f:
        return [clean(line, width) for line in f.read().splitlines()]


def python_sources() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.glob("*.py") if p.stat().st_size > 8000)


def python_source(path: Path, width: int) -> list[str]:
    return [clean(line, width) for line in path.read_text(errors="replace").splitlines()]


class Texts:
    """Screens of text from the machine's sources, drawn in a fixed order from ``seed``."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self._man: dict[tuple[str, int], list[str]] = {}

    def _screen(self, lines: list[str], rows: int) -> list[str]:
        """``rows`` consecutive lines from a random place, with enough words on them."""
        for _ in range(50):
            start = self.random.randrange(max(1, len(lines) - rows))
            screen = lines[start : start + rows]
            if sum(len(re.findall(r"[A-Za-z]{4,}", line)) for line in screen) >= rows:
                return screen
        return lines[:rows]

    def man(self, width: int) -> list[str]:
        name = self.random.choice(MAN_PAGES)
        if (name, width) not in self._man:
            self._man[name, width] = man_page(name, width)
        return self._man[name, width]

    def screen(self, kind: str, width: int, rows: int) -> list[str]:
        """A screen of ``rows`` lines of ``kind``: man, dpkg, changelog or python."""
        if kind == "man":
            lines = self.man(width)
        elif kind == "dpkg":
            lines = dpkg_log(width)
        elif kind == "changelog":
            lines = changelog(self.random.choice(changelogs()), width)
        elif kind == "python":
            lines = python_source(self.random.choice(python_sources()), width)
        else:
            raise ValueError(kind)
        return self._screen(lines, rows) if lines else [f"no {kind} text on this machine"]

    def prose(self, width: int, rows: int) -> list[str]:
        """Changelog entries without their indentation (a GTK window, a web page)."""
        lines = [line.strip() for line in self.screen("changelog", width, rows * 2)]
        return [line for line in lines if line][:rows]


def html_page(title: str, lines: list[str]) -> str:
    """A plain page: one paragraph per line, in a font the page fixes, no scripts."""
    body = "\n".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<style>body{font:16px 'DejaVu Sans',sans-serif;margin:16px}p{margin:6px 0}</style>"
        f"</head><body>\n{body}\n</body></html>\n"
    )


if __name__ == "__main__":  # a look at the texts: python -m bench._recall_texts [seed]
    texts = Texts(int(sys.argv[1]) if len(sys.argv) > 1 else 17)
    for kind in ("man", "dpkg", "changelog", "python"):
        print(f"--- {kind}")
        print("\n".join(texts.screen(kind, 98, 8)))
