"""A real, private, headless sway desktop: for the Wayland tests and benchmarks.

    with sway_desktop() as desk:
        term = desk.open_foot(["ECONNREFUSED 127.0.0.1:5432"], title="server log")
        desk.focus(term)
        Daemon(home, environ=desk.daemon_env) ...

sway refuses to run as root, and CI runs as root; so the compositor and every window run
as an unprivileged user (``headless._user``, the base this desktop shares with GNOME's),
while the caller (the daemon under test) stays itself and reaches the user's sockets by
absolute path, as root may. Run by an ordinary user, everything runs as that user. It starts:

    dbus-daemon                 a private session bus, open to the caller (``<allow user>``)
    at-spi-bus-launcher         the accessibility bus; IsEnabled is set, the registry woken
    sway                        WLR_BACKENDS=headless, WLR_RENDERER=pixman, one 1920x1080
                                output HEADLESS-1, no Xwayland, no borders or bar
    wtype -s …                  a virtual keyboard kept on sway's seat: without a keyboard
                                GTK never gets keyboard focus, so no AT-SPI focus events

Outputs that can be unplugged: sway 1.7 cannot remove a headless output (it has no
``output … unplug``, and fails to commit ``output … disable`` on the headless backend). With
``sway_desktop(nested=True)`` the sway under test runs on wlroots' Wayland backend inside
another headless sway, where each of its outputs (WL-1, and those ``create_output`` adds) is
a window of the outer one: ``unplug(output)`` closes that window, and the output is gone, as
a monitor unplugged.

``daemon_env`` is what the daemon needs (WAYLAND_DISPLAY and SWAYSOCK as absolute paths
through links this desktop keeps pointing at the current compositor, the session bus, no
DISPLAY); ``env`` is the windows' environment. Every process carries the marker of
``headless.processes``, and the folder its prefix, so the same sweeps remove what a killed
run left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from headless._user import UserDesktop, WaylandWindow, prepared
from headless.processes import (
    INHERITED,
    MARKER,
    PIPE_HOLDS,
    START_TIMEOUT_S,
    DesktopError,
    wait_for,
)
from headless.processes import missing_packages as packages_missing

WIDTH, HEIGHT = 1920, 1080
PACKAGES = {
    "sway": "sway",
    "swaymsg": "sway",
    "foot": "foot",
    "wtype": "wtype",
    "zenity": "zenity",
    "dbus-daemon": "dbus-daemon",
    "/usr/libexec/at-spi-bus-launcher": "at-spi2-core",
}

_SWAY_CONFIG = f"""\
output HEADLESS-1 mode {WIDTH}x{HEIGHT} position 0 0
default_border none
default_floating_border none
focus_follows_mouse no
focus_on_window_activation focus
xwayland disable
"""

# The outer sway of a nested desktop: large enough for two 1920x1080 inner outputs, each a
# floating window (a tiled one would be resized to share the outer output).
_OUTER_CONFIG = """\
output HEADLESS-1 mode 4000x1200 position 0 0
default_border none
default_floating_border none
xwayland disable
for_window [app_id="wlroots"] floating enable
"""


def missing_packages() -> list[str]:
    """The Debian packages to install before a sway desktop can start (empty when none)."""
    return packages_missing(PACKAGES)


@dataclass
class SwayDesktop(UserDesktop):
    """A running headless sway desktop; see the module docstring."""

    packages: ClassVar[dict[str, str]] = PACKAGES
    kind: ClassVar[str] = "sway"

    nested: bool = False
    outer: tuple[Path, Path] | None = None  # the outer sway's Wayland and IPC sockets

    @property
    def wayland_link(self) -> Path:
        return self.root / "wayland.sock"

    @property
    def sway_link(self) -> Path:
        return self.root / "sway.sock"

    @property
    def daemon_env(self) -> dict[str, str]:
        """The environment of a daemon that records this desktop (as the caller)."""
        env = {name: os.environ[name] for name in INHERITED if name in os.environ}
        return env | {
            MARKER: self.token,
            "WAYLAND_DISPLAY": str(self.wayland_link),
            "SWAYSOCK": str(self.sway_link),
            "XDG_SESSION_TYPE": "wayland",
            "XDG_CURRENT_DESKTOP": "sway",
            "DBUS_SESSION_BUS_ADDRESS": self.bus_address,
            "AT_SPI_BUS_ADDRESS": self.env.get("AT_SPI_BUS_ADDRESS", ""),
        }

    # ---------------------------------------------------------------- windows

    def open_foot(
        self, text_lines: Sequence[str], title: str, *, app_id: str = "foot"
    ) -> WaylandWindow:
        """A foot terminal showing ``text_lines`` (black on white, DejaVu Sans Mono 11);
        ``WaylandWindow.write`` adds more. It runs ``cat`` on a FIFO, so no prompt or
        cursor blink changes the screen on its own."""
        folder = Path(tempfile.mkdtemp(prefix="term-", dir=self.root))
        os.chown(folder, self.uid, self.gid)
        fifo = folder / "feed"
        os.mkfifo(fifo, 0o600)
        os.chown(fifo, self.uid, self.gid)
        feed = os.open(fifo, os.O_RDWR)  # never blocks, and keeps ``cat`` from seeing EOF
        argv = [
            "foot",
            *("-T", title, "-a", app_id, "-f", "DejaVu Sans Mono:size=11"),
            *("-o", "colors.background=ffffff", "-o", "colors.foreground=000000"),
            *("-o", "cursor.blink=no", "-o", "cursor.style=underline"),
            *("cat", str(fifo)),
        ]
        text = ("\n".join(text_lines) + "\n").replace("\n", "\r\n").encode()
        # Written before the terminal starts when the pipe holds it (see ``open_xterm``).
        early = len(text) <= PIPE_HOLDS
        if early:
            os.write(feed, text)
        window = self._open("foot", argv, title)
        window.feed = feed
        if not early:
            os.write(feed, text)
        return window

    def open_zenity_text(self, text: str, title: str) -> WaylandWindow:
        """A GTK ``zenity --text-info`` window showing ``text`` (its text is on AT-SPI)."""
        path = self._private_file("zenity-", "text.txt", text)
        argv = ["zenity", "--text-info", f"--filename={path}", f"--title={title}"]
        return self._open("zenity", argv, title)

    def _open(self, name: str, argv: list[str], title: str) -> WaylandWindow:
        process, log = self._spawn(name, argv)
        try:
            con_id = wait_for(
                lambda: next((w["id"] for w in self.views() if w["pid"] == process.pid), None),
                f"{name}'s window",
                START_TIMEOUT_S,
            )
        except TimeoutError:
            raise self._failure(name, process, log, "no window appeared") from None
        assert con_id is not None
        window = WaylandWindow(name, int(con_id), process, title)
        self.windows.append(window)
        return window

    def focus(self, window: WaylandWindow) -> None:
        """Focus ``window``; returns once sway says it is focused."""
        self.swaymsg(f"[con_id={window.window_id}] focus")
        wait_for(
            lambda: any(w["focused"] for w in self.views() if w["id"] == window.window_id),
            f"{window.title} focused",
        )

    def views(self) -> list[dict[str, Any]]:
        """Every view in sway's tree (``id``, ``pid``, ``name``, ``app_id``, ``focused``,
        ``rect``, ``visible``, ``output``)."""
        found: list[dict[str, Any]] = []

        def walk(node: dict[str, Any], output: str) -> None:
            if node.get("type") == "output":
                output = node["name"]
            children = node.get("nodes", []) + node.get("floating_nodes", [])
            if not children and "pid" in node:
                found.append(node | {"output": output})
            for child in children:
                walk(child, output)

        walk(json.loads(self.swaymsg("-t", "get_tree", raw=True)), "")
        return found

    def swaymsg(self, *command: str, raw: bool = False) -> str:
        """Run a sway command (``raw``: ``command`` are swaymsg's own arguments)."""
        argv = ["swaymsg", "-s", str(self.sway_link), *(command if raw else [" ".join(command)])]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        if done.returncode != 0:
            raise DesktopError(f"swaymsg {' '.join(command)} failed: {done.stdout}{done.stderr}")
        return done.stdout

    def settle(self, *, quiet_s: float = 0.15, timeout: float = 5.0) -> None:
        """Wait until the first output has not changed for ``quiet_s``."""
        from capture.wlroots import WlrootsProbe

        probe = WlrootsProbe(str(self.wayland_link))
        try:
            deadline = time.monotonic() + timeout
            last = probe.grab(None)[0].tobytes()
            quiet_since = time.monotonic()
            while time.monotonic() - quiet_since < quiet_s:
                if time.monotonic() > deadline:
                    raise DesktopError(f"the screen kept changing for {timeout} s")
                time.sleep(0.03)
                now = probe.grab(None)[0].tobytes()
                if now != last:
                    last, quiet_since = now, time.monotonic()
        finally:
            probe.close()

    # ------------------------------------------------------------ compositor

    def stop_compositor(self) -> None:
        """Stop sway, as a compositor that crashes: the windows lose it too."""
        # The outer sway of a nested desktop stays: it is the machine, not the compositor.
        self.close()
        self._stop_components("sway", "wtype")

    def unplug(self, output: str) -> None:
        """Remove ``output`` (nested desktops only): close the outer window that is it."""
        if self.outer is None:
            raise DesktopError("only a nested sway desktop can unplug an output")
        argv = ["swaymsg", "-s", str(self.outer[1]), f'[title=" - {output}$"] kill']
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        if done.returncode != 0:
            raise DesktopError(f"cannot unplug {output}: {done.stdout}{done.stderr}")
        wait_for(lambda: output not in self.outputs(), f"{output} gone")

    def outputs(self) -> list[str]:
        """The names of sway's outputs."""
        return [o["name"] for o in json.loads(self.swaymsg("-t", "get_outputs", raw=True))]

    def start_compositor(self) -> None:
        """sway on this desktop's runtime folder (again), and the virtual keyboard; when
        nested, inside an outer headless sway (started once)."""
        config = self.root / "sway.conf"
        config.write_text(
            _SWAY_CONFIG.replace("HEADLESS-1", "WL-1") if self.nested else _SWAY_CONFIG
        )
        config.chmod(0o644)  # read by the user sway runs as, whatever this process's umask
        env = self.env | {"WLR_RENDERER": "pixman", "WLR_LIBINPUT_NO_DEVICES": "1"}
        env.pop("WAYLAND_DISPLAY", None)
        env.pop("SWAYSOCK", None)
        env["WLR_BACKENDS"] = "headless"
        if self.nested:
            if self.outer is None:
                outer_config = self.root / "outer.conf"
                outer_config.write_text(_OUTER_CONFIG)
                outer_config.chmod(0o644)
                outer = self._spawn("sway-outer", ["sway", "-c", str(outer_config)], env=env)
                self.outer = self._sockets("sway-outer", *outer, set())
            env |= {"WLR_BACKENDS": "wayland", "WAYLAND_DISPLAY": self.outer[0].name}
        process, log = self._spawn("sway", ["sway", "-c", str(config)], env=env)
        wayland, ipc = self._sockets("sway", process, log, {self.outer[0]} if self.outer else set())
        for link, target in ((self.wayland_link, wayland), (self.sway_link, ipc)):
            link.unlink(missing_ok=True)
            link.symlink_to(target)
        self.env["WAYLAND_DISPLAY"] = wayland.name
        self.env["SWAYSOCK"] = str(ipc)
        wait_for(lambda: self._answers(), "sway's IPC", START_TIMEOUT_S)
        # GTK takes keyboard focus (and so sends AT-SPI focus events) only on a seat with
        # a keyboard: wtype's virtual keyboard, kept alive by a long sleep.
        self._spawn("wtype", ["wtype", "-s", "100000000"])

    def _sockets(
        self, name: str, process: subprocess.Popen[bytes], log: Path, taken: set[Path]
    ) -> tuple[Path, Path]:
        """The Wayland and IPC sockets ``process`` (a sway) made, once both are there."""

        def sockets() -> tuple[Path, Path] | None:
            if process.poll() is not None:
                raise self._failure(name, process, log, "exited early")
            ipc = list(self.run_dir.glob(f"sway-ipc.*.{process.pid}.sock"))
            shown = [
                p
                for p in self.run_dir.glob("wayland-*")
                if not p.name.endswith(".lock") and p not in taken
            ]
            return (shown[0], ipc[0]) if ipc and shown else None

        found = wait_for(sockets, f"{name}'s sockets", START_TIMEOUT_S)
        assert found is not None
        return found

    def _answers(self) -> bool:
        try:
            self.swaymsg("-t", "get_version", raw=True)
        except (DesktopError, subprocess.TimeoutExpired):
            return False
        return True


@contextlib.contextmanager
def sway_desktop(*, nested: bool = False) -> Iterator[SwayDesktop]:
    """Start the sway desktop (see the module docstring), yield it, and stop all of it;
    ``nested``: inside another sway, so that outputs can be unplugged."""
    desk = prepared(SwayDesktop, missing_packages(), {"XDG_CURRENT_DESKTOP": "sway"})
    desk.nested = nested
    try:
        desk._start_bus()
        desk._start_accessibility()
        desk.start_compositor()
        yield desk
    finally:
        desk.stop()
