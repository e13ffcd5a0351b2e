"""What the sway and GNOME desktops share: a folder of their own, a private session bus and
the accessibility bus, and components and windows run as an unprivileged user.

sway refuses to run as root, and CI runs as root; so the compositor and every window run
as ``USER`` (created with ``useradd --system`` when missing), while the caller (the daemon
under test) stays itself and reaches the user's sockets by absolute path, as root may. Run
by an ordinary user, everything runs as that user. Every process carries the marker of
``headless.processes``, and the folder its prefix, so the same sweeps remove what a killed
run left behind.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from headless.bus import accessibility_enabled, name_has_owner
from headless.processes import (
    FOLDER_PREFIX,
    MARKER,
    START_TIMEOUT_S,
    DesktopError,
    stop_group,
    sweep,
    sweep_orphans,
    wait_for,
)
from headless.x11 import Window

USER = "backscroll-wl"

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
            stop_group(window.process)
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
            stop_group(process)
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
                lambda: name_has_owner(self.bus_address, "org.a11y.Bus"),
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
            stop_group(process)
        self.components.clear()
        try:
            sweep(self.token)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


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


D = TypeVar("D", bound=UserDesktop)


def prepared(factory: type[D], missing: list[str], session: dict[str, str]) -> D:
    """A desktop of ``factory``, not yet started: its folder (HOME, XDG dirs and the
    runtime folder, the user's own) and its programs' environment, updated by ``session``.
    Raises ``DesktopError`` naming the packages to install when ``missing`` is not empty."""
    if missing:
        raise DesktopError(
            f"the {factory.kind} desktop needs: apt-get install -y {' '.join(missing)}"
        )
    sweep_orphans()
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
