"""A real, private, headless sway desktop: for the Wayland tests and benchmarks.

    with sway_desktop() as desk:
        term = desk.open_foot(["ECONNREFUSED 127.0.0.1:5432"], title="server log")
        desk.focus(term)
        Daemon(home, environ=desk.daemon_env) ...

sway refuses to run as root, and CI runs as root; so the compositor and every window run
as an unprivileged user (``USER``, created with ``useradd --system`` when missing), while
the caller (the daemon under test) stays itself and reaches the user's sockets by absolute
path, as root may. Run by an ordinary user, everything runs as that user. It starts:

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
``backscroll.desktop``, and the folder its prefix, so the same sweeps remove what a killed
run left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from backscroll.desktop import (
    FOLDER_PREFIX,
    INHERITED,
    MARKER,
    PIPE_HOLDS,
    START_TIMEOUT_S,
    Window,
    _name_has_owner,
    _stop_group,
    _sweep,
    _sweep_orphans,
    accessibility_enabled,
    wait_for,
)
from backscroll.desktop import missing_packages as desktop_packages_missing
from base.errors import DesktopError

USER = "backscroll-wl"
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

_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>{bus}</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="{caller}"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def missing_packages() -> list[str]:
    """The Debian packages to install before a sway desktop can start (empty when none)."""
    return desktop_packages_missing(PACKAGES)


class WaylandWindow(Window):
    """A program's window on the sway desktop; ``window_id`` is sway's container id."""

    def write(self, text: str) -> None:
        """Show ``text`` in the terminal as if a program printed it (escapes work): foot
        reads a FIFO, not a pty, so nothing turns "\n" into "\r\n" on the way."""
        super().write(text.replace("\n", "\r\n"))


@dataclass
class UserDesktop:
    """What the sway and GNOME desktops share: a folder of their own, a session bus and
    the accessibility bus, components and windows run as the unprivileged user."""

    root: Path
    token: str
    uid: int
    gid: int
    env: dict[str, str] = field(default_factory=dict)
    bus_address: str = ""
    components: list[tuple[str, subprocess.Popen[bytes], Path]] = field(default_factory=list)
    windows: list[WaylandWindow] = field(default_factory=list)

    # binary → the Debian package that installs it, for the error naming what is missing.
    packages: ClassVar[dict[str, str]] = {}
    kind: ClassVar[str] = ""

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    def _private_file(self, prefix: str, name: str, data: str | bytes) -> Path:
        """A file in a new folder, both the user's own: what a window run as the user reads."""
        folder = Path(tempfile.mkdtemp(prefix=prefix, dir=self.root))
        os.chown(folder, self.uid, self.gid)
        path = folder / name
        if isinstance(data, str):
            path.write_text(data)
        else:
            path.write_bytes(data)
        os.chown(path, self.uid, self.gid)
        return path

    def close(self, *windows: WaylandWindow) -> None:
        """Close ``windows`` (every window this desktop opened, when none is given)."""
        for window in list(windows or self.windows):
            _stop_group(window.process)
            if window.feed is not None:
                os.close(window.feed)
                window.feed = None
            self._forget(window.process)
            with contextlib.suppress(ValueError):
                self.windows.remove(window)

    def _forget(self, process: subprocess.Popen[bytes]) -> None:
        self.components = [c for c in self.components if c[1] is not process]

    def _stop_components(self, *names: str) -> None:
        for _name, process, _log in [c for c in self.components if c[0] in names]:
            _stop_group(process)
            self._forget(process)

    # ------------------------------------------------------------ start / stop

    def _spawn(
        self, name: str, argv: list[str], *, env: dict[str, str] | None = None
    ) -> tuple[subprocess.Popen[bytes], Path]:
        binary = argv[0]
        path = shutil.which(binary) if not os.path.isabs(binary) else binary
        if path is None:
            raise DesktopError(
                f"{binary} is not installed; the {self.kind} desktop needs it: "
                f"apt-get install -y {self.packages.get(binary, binary)}"
            )
        log = self.root / "logs" / f"{name}-{len(self.components)}.log"
        as_user: dict[str, Any] = {}
        if os.getuid() != self.uid:
            as_user = {"user": self.uid, "group": self.gid, "extra_groups": []}
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [path, *argv[1:]],
                env=env or self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                cwd=self.root,
                **as_user,
            )
        self.components.append((name, process, log))
        return process, log

    def _failure(
        self, name: str, process: subprocess.Popen[bytes], log: Path, reason: str
    ) -> DesktopError:
        status = process.poll()
        exited = "" if status is None else f", exited with status {status}"
        detail = log.read_text(errors="replace").strip()[-4000:] or "(no output)"
        return DesktopError(f"{name} did not start: {reason}{exited}\n{detail}")

    def _start_bus(self, bus: str = "session") -> str:
        """A private bus of type ``bus`` ("session" or "system"); its address, also set
        in ``env`` (and, for the session bus, in ``bus_address``)."""
        config = self.root / f"{bus}-bus.conf"
        socket = self.run_dir / ("bus" if bus == "session" else f"{bus}_bus")
        caller = pwd.getpwuid(os.getuid()).pw_name
        config.write_text(_BUS_CONFIG.format(bus=bus, socket=socket, caller=caller))
        config.chmod(0o644)  # read by the user the bus runs as, whatever this process's umask
        process, log = self._spawn(
            "dbus-daemon", ["dbus-daemon", f"--config-file={config}", "--nofork"]
        )
        try:
            wait_for(socket.exists, f"the {bus} bus", START_TIMEOUT_S)
        except TimeoutError:
            raise self._failure("dbus-daemon", process, log, "no socket") from None
        address = f"unix:path={socket}"
        self.env[f"DBUS_{bus.upper()}_BUS_ADDRESS"] = address
        if bus == "session":
            self.bus_address = address
        return address

    def _start_accessibility(self) -> None:
        launcher = "/usr/libexec/at-spi-bus-launcher"
        process, log = self._spawn("at-spi-bus-launcher", [launcher, "--launch-immediately"])
        try:
            wait_for(
                lambda: _name_has_owner(self.bus_address, "org.a11y.Bus"),
                "org.a11y.Bus",
                START_TIMEOUT_S,
            )
        except TimeoutError:
            raise self._failure("at-spi-bus-launcher", process, log, "no org.a11y.Bus") from None
        self.env["AT_SPI_BUS_ADDRESS"] = accessibility_enabled(self.bus_address)

    def stop(self) -> None:
        """Close every window, stop every component and remove the desktop's folder."""
        self.close()
        for _name, process, _log in reversed(self.components):
            _stop_group(process)
        self.components.clear()
        try:
            _sweep(self.token)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


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


def test_user() -> tuple[int, int]:
    """(uid, gid) to run the compositor as: ``USER`` when running as root (created when missing),
    else the caller."""
    if os.getuid() != 0:
        return os.getuid(), os.getgid()
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        done = subprocess.run(
            [
                *("useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent"),
                *("--shell", "/usr/sbin/nologin", USER),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0 and "already exists" not in done.stderr:
            raise DesktopError(f"cannot create the user {USER}: {done.stderr.strip()}") from None
        entry = pwd.getpwnam(USER)
    return entry.pw_uid, entry.pw_gid


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


D = TypeVar("D", bound=UserDesktop)


def prepared(factory: type[D], missing: list[str], session: dict[str, str]) -> D:
    """A desktop of ``factory``, not yet started: its folder (HOME, XDG dirs and the
    runtime folder, the user's own) and its programs' environment, updated by ``session``.
    Raises ``DesktopError`` naming the packages to install when ``missing`` is not empty."""
    if missing:
        raise DesktopError(
            f"the {factory.kind} desktop needs: apt-get install -y {' '.join(missing)}"
        )
    _sweep_orphans()
    uid, gid = test_user()
    token = f"{os.getpid()}-{secrets.token_hex(8)}"
    root = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
    os.chmod(root, 0o711)  # the user reaches its own folders inside, nothing else
    for folder in ("logs", "home", "run", "config", "cache", "data"):
        (root / folder).mkdir(mode=0o700)
        if folder != "logs":
            os.chown(root / folder, uid, gid)
    env = {
        name: os.environ[name] for name in ("PATH", "LANG", "LC_ALL", "TZ") if name in os.environ
    }
    env.update(
        {
            MARKER: token,
            "HOME": str(root / "home"),
            "USER": pwd.getpwuid(uid).pw_name,
            "XDG_RUNTIME_DIR": str(root / "run"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_CACHE_HOME": str(root / "cache"),
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_SESSION_TYPE": "wayland",
            "GDK_BACKEND": "wayland",
            "LANG": os.environ.get("LANG") or "C.UTF-8",
            "GSETTINGS_BACKEND": "memory",
            "GIO_USE_VFS": "local",
        }
        | session
    )
    return factory(root=root, token=token, uid=uid, gid=gid, env=env)
