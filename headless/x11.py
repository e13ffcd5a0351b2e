"""A real, private, headless X desktop: for ``backscroll demo``, the tests and the benchmarks.

    with headless_desktop() as desk:
        term = desk.open_xterm(["ECONNREFUSED 127.0.0.1:5432"], title="server log")
        desk.activate(term.window_id)
        ...

It starts, each in a process group of its own and in this order:

    Xvfb :N (picked with -displayfd)       1920x1080x24 (or ``size``), no TCP
    dbus-daemon                            a private session bus, no service activation
    openbox                                sets _NET_ACTIVE_WINDOW, frames and stacks windows
    at-spi-bus-launcher                    the accessibility bus, announced as org.a11y.Bus;
                                           org.a11y.Status.IsEnabled is then set to true and
                                           the registry (at-spi2-registryd) is woken up

and nothing is left when it exits: every process it starts gets a marker variable in its
environment, so the helpers those processes spawn themselves (the accessibility bus's own
dbus-daemon, the registry) are found in /proc and killed too; the temporary folder that
holds HOME, XDG_RUNTIME_DIR, the sockets and the logs is removed. What a run killed before
its cleanup left behind is removed by the next run (marker and folder name their owner's
pid). A component that fails to start raises ``DesktopError`` with its log; a missing
binary raises it with the Debian package to install (``missing_packages()`` lists them all
at once).

``desk.env`` is the environment a program on this desktop should get: its own DISPLAY and
session bus, a throwaway HOME and XDG dirs, and no NO_AT_BRIDGE, so GTK apps publish their
widgets over AT-SPI. A program started with it carries the marker, so it is stopped with
the desktop even if its starter forgets it.

Several monitors: Xvfb has one output, but RandR 1.5 lets a client cut its screen into
monitors (``xrandr --setmonitor``): start a wider screen (``headless_desktop(size=(3840,
1080))``) and ``desk.set_monitors((0, 0, 1920, 1080), (1920, 0, 1920, 1080))``; mss, the
daemon and openbox then see two monitors, and ``set_monitors`` again adds or removes one.

tests/desktop.py adds a gnome-keyring on the same bus and the tests' session fixture."""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

from headless.bus import accessibility_enabled, call, name_has_owner
from headless.processes import (
    FOLDER_PREFIX,
    INHERITED,
    MARKER,
    PIPE_HOLDS,
    START_TIMEOUT_S,
    TERMINAL_FONT,
    DesktopError,
    stop_group,
    sweep,
    sweep_orphans,
)
from headless.processes import missing_packages as packages_missing

WIDTH, HEIGHT = 1920, 1080


# binary → the Debian package that installs it.
PACKAGES = {
    "Xvfb": "xvfb",
    "dbus-daemon": "dbus-daemon",
    "openbox": "openbox",
    "xdotool": "xdotool",
    "/usr/libexec/at-spi-bus-launcher": "at-spi2-core",
    "xterm": "xterm",
    "zenity": "zenity",
}

CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
FIREFOX_PREFS = (
    '"browser.startup.homepage_override.mstone", "ignore"',
    '"startup.homepage_welcome_url", ""',
    '"startup.homepage_welcome_url.additional", ""',
    '"datareporting.policy.firstRunURL", ""',
    '"datareporting.policy.dataSubmissionEnabled", false',
    '"toolkit.telemetry.reportingpolicy.firstRun", false',
    '"browser.aboutwelcome.enabled", false',
    '"browser.shell.checkDefaultBrowser", false',
    '"app.update.disabledForTesting", true',
    '"network.captive-portal-service.enabled", false',
    '"network.connectivity-service.enabled", false',
    '"browser.safebrowsing.update.enabled", false',
)


# No <servicedir>: with the system's service files the first call to a well-known name
# would auto-start the real daemon (a second gnome-keyring, dconf, gvfs) behind the test's
# back. Everything this desktop needs is started explicitly.
_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def missing_packages() -> list[str]:
    """The Debian packages to install before an X11 desktop can start (empty when none)."""
    return packages_missing(PACKAGES)


def require(binary: str) -> str:
    """The path of ``binary``, or ``DesktopError`` naming the package that provides it."""
    path = binary if os.path.isabs(binary) and os.access(binary, os.X_OK) else None
    path = path or shutil.which(binary)
    if path is None:
        package = PACKAGES.get(binary, binary)
        raise DesktopError(
            f"{binary} is not installed; the headless desktop needs it: "
            f"apt-get install -y {package}"
        )
    return path


@dataclass
class Window:
    """A program's top-level window on the desktop."""

    name: str
    window_id: int
    process: subprocess.Popen[bytes]
    title: str
    feed: int | None = None  # xterm only: a writable fd whose bytes the terminal shows

    @property
    def pid(self) -> int:
        return self.process.pid

    def write(self, text: str) -> None:
        """Show ``text`` in the terminal as if a program printed it (escapes work)."""
        if self.feed is None:
            raise DesktopError(f"{self.name} has no terminal to write to")
        os.write(self.feed, text.encode())  # the pty turns "\n" into "\r\n" (ONLCR)


@dataclass
class _Component:
    name: str
    process: subprocess.Popen[bytes]
    log: Path


@dataclass
class Desktop:
    """A running headless desktop; see the module docstring."""

    root: Path
    token: str
    env: dict[str, str] = field(default_factory=dict)
    size: tuple[int, int] = (WIDTH, HEIGHT)
    display: str = ""
    bus_address: str = ""
    components: list[_Component] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)

    @property
    def daemon_env(self) -> dict[str, str]:
        """The environment of a daemon that records this desktop, as the sway and GNOME
        desktops give theirs: its display and session bus."""
        return self.env

    # ----------------------------------------------------------------- programs

    def open_xterm(
        self,
        text_lines: Sequence[str],
        title: str,
        *,
        columns: int = 120,
        rows: int = 36,
        font: str | None = "DejaVu Sans Mono",
        font_size: int = 11,
        dark: bool = False,
        position: tuple[int, int] = (40, 40),
        command: Sequence[str] | None = None,
    ) -> Window:
        """An xterm showing ``text_lines``; ``Window.write`` adds more.

        The terminal runs ``cat`` on a FIFO this desktop keeps open, so no shell prompt or
        blinking cursor (``+bc``) makes the screen change on its own. DejaVu Sans Mono 11
        (Xft) stands in for a real terminal font: the X core fonts are not installed.
        ``font=None`` leaves xterm's own default, the X server's built-in bitmap ``fixed``
        (6×13). ``command`` runs instead of ``cat`` (``text_lines`` is then ignored); such a
        terminal takes synthetic keys (``allowSendEvents``), so ``xdotool key --window``
        reaches it while another window is in front.
        """
        if not TERMINAL_FONT.exists():
            raise DesktopError(
                f"{TERMINAL_FONT} is missing; the terminals are drawn with it: "
                "apt-get install -y fonts-dejavu-core"
            )
        colours = ("-bg", "black", "-fg", "white") if dark else ("-bg", "white", "-fg", "black")
        argv = [
            require("xterm"),
            *("-T", title, "-n", title, "+bc", *colours),
            *(("-fa", font, "-fs", str(font_size)) if font else ()),
            *("-geometry", f"{columns}x{rows}+{position[0]}+{position[1]}"),
        ]
        if command is not None:
            argv += ["-xrm", "XTerm*allowSendEvents: true", "-e", *command]
            return self._open("xterm", argv, title)
        fifo = Path(tempfile.mkdtemp(prefix="term-", dir=self.root)) / "feed"
        os.mkfifo(fifo, 0o600)
        # O_RDWR never blocks on a FIFO and keeps a writer attached, so ``cat`` never sees
        # end of file between two writes.
        feed = os.open(fifo, os.O_RDWR)
        text = ("\n".join(text_lines) + "\n").encode()
        # Written before the terminal starts when the pipe holds it, so that its first frame
        # shows it: written after, a daemon running may capture the new window empty.
        early = len(text) <= PIPE_HOLDS
        if early:
            os.write(feed, text)
        window = self._open("xterm", [*argv, "-e", "cat", str(fifo)], title)
        window.feed = feed
        if not early:
            os.write(feed, text)
        return window

    def open_zenity_text(
        self,
        text: str,
        title: str,
        *,
        width: int = 900,
        height: int = 600,
        editable: bool = False,
        accessible: bool = True,
    ) -> Window:
        """A GTK ``zenity --text-info`` window showing ``text``: its text is on AT-SPI,
        unless ``accessible`` is False (``NO_AT_BRIDGE=1``: the same window, read by OCR)."""
        path = Path(tempfile.mkdtemp(prefix="zenity-", dir=self.root)) / "text.txt"
        path.write_text(text)
        argv = [
            require("zenity"),
            "--text-info",
            f"--filename={path}",
            f"--title={title}",
            *(f"--width={width}", f"--height={height}"),
            *(["--editable"] if editable else []),
        ]
        env = None if accessible else {**self.env, "NO_AT_BRIDGE": "1"}
        return self._open("zenity", argv, title, env=env)

    def open_browser(self, browser: str, url: str, *, flags: Sequence[str] = ()) -> Window:
        """Chromium (``chromium``) or Firefox (``firefox-esr``) showing ``url``, in a
        throwaway profile, without first-run pages or network use of its own."""
        profile = Path(tempfile.mkdtemp(prefix="profile-", dir=self.root))
        if browser == "firefox-esr":
            (profile / "user.js").write_text("".join(f"user_pref({p});\n" for p in FIREFOX_PREFS))
            argv = [require(browser), "--no-remote", "--profile", str(profile)]
        else:
            # As root (CI) Chromium's sandbox cannot start; no GPU in Xvfb.
            argv = [require(browser), *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
        return self._open(browser, [*argv, *flags, url], url)

    def open_program(
        self, name: str, argv: Sequence[str], title: str, *, env: dict[str, str] | None = None
    ) -> Window:
        """Any program with a window (a browser, an editor); returns once it is managed.
        ``env`` replaces the desktop's environment (build it from ``desk.env``)."""
        return self._open(name, [require(argv[0]), *argv[1:]], title, env=env)

    def _open(
        self, name: str, argv: list[str], title: str, *, env: dict[str, str] | None = None
    ) -> Window:
        component = self._spawn(name, argv, env=env)
        window_id = self._wait_for_window(component)
        window = Window(name, window_id, component.process, title)
        self.windows.append(window)
        return window

    def _wait_for_window(self, component: _Component) -> int:
        # --sync polls until the program's window (the one carrying its _NET_WM_PID) is
        # mapped; --onlyvisible skips GTK's hidden group-leader window.
        argv = [require("xdotool"), "search", "--sync", "--onlyvisible", "--pid"]
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                found = self.run([*argv, str(component.process.pid)], timeout=START_TIMEOUT_S)
                break
            except (subprocess.TimeoutExpired, DesktopError) as error:
                # A browser maps and destroys windows while it starts: the search then fails
                # with BadWindow on one that is gone, and is asked again.
                alive = component.process.poll() is None
                if not alive or time.monotonic() > deadline or "BadWindow" not in str(error):
                    raise self._failure(component, f"no window appeared ({error})") from None
                time.sleep(0.2)
        window_id = int(found.split()[0])
        self._wait(lambda: window_id in self._client_list(), f"{component.name} managed")
        return window_id

    def close(self, *windows: Window) -> None:
        """Close ``windows`` (every window this desktop opened, when none is given)."""
        for window in list(windows or self.windows):
            stop_group(window.process)
            if window.feed is not None:
                os.close(window.feed)
                window.feed = None
            self.components = [c for c in self.components if c.process is not window.process]
            with contextlib.suppress(ValueError):
                self.windows.remove(window)

    # ------------------------------------------------------------------ windows

    def activate(self, window_id: int) -> None:
        """Raise and focus a window; returns once openbox has made it _NET_ACTIVE_WINDOW."""
        self.run([require("xdotool"), "windowactivate", "--sync", str(window_id)])

    def set_title(self, window_id: int, title: str) -> None:
        """Retitle a window from outside (WM_NAME and _NET_WM_NAME), as a browser tab does."""
        self.run([require("xdotool"), "set_window", "--name", title, str(window_id)])

    def stop_window_manager(self) -> None:
        """Stop openbox (for tests of a session without a window manager)."""
        for component in [c for c in self.components if c.name == "openbox"]:
            stop_group(component.process)
            self.components.remove(component)

    def set_monitors(self, *rects: tuple[int, int, int, int]) -> None:
        """Cut the screen into these monitors (x, y, width, height), replacing the ones set
        before (``xrandr --setmonitor`` / ``--delmonitor``). The first holds Xvfb's one
        output, so RandR lists these and no other; none given: the whole screen again."""
        from Xlib import display
        from Xlib.ext import randr

        connection = display.Display(self.display)
        try:
            root = connection.screen().root
            for listed in root.xrandr_get_monitors(is_active=False).monitors:
                if not listed.automatic:
                    root.xrandr_delete_monitor(listed.name)
            output = root.xrandr_get_screen_resources().outputs[0]
            opcode = connection.display.get_extension_major(randr.extname)
            set_monitor = _set_monitor_request()
            for n, (x, y, width, height) in enumerate(rects):
                set_monitor(
                    display=connection.display,
                    opcode=opcode,
                    window=root,
                    name=connection.intern_atom(f"MONITOR-{n + 1}"),
                    primary=n == 0,
                    automatic=False,
                    x=x,
                    y=y,
                    width=width,
                    height=height,
                    # 96 dpi, as Xvfb reports its screen
                    width_mm=round(width * 25.4 / 96),
                    height_mm=round(height * 25.4 / 96),
                    outputs=[output] if n == 0 else [],
                )
            connection.sync()
        finally:
            connection.close()

    def monitors(self) -> list[tuple[int, int, int, int]]:
        """The monitors RandR lists now (x, y, width, height), in its order."""
        from Xlib import display

        connection = display.Display(self.display)
        try:
            listed = connection.screen().root.xrandr_get_monitors(is_active=True).monitors
            return [(m.x, m.y, m.width_in_pixels, m.height_in_pixels) for m in listed]
        finally:
            connection.close()

    def screenshot_png(self, path: Path | str) -> Path:
        """The whole screen as a PNG file (for failing tests and the README)."""
        import mss.tools

        with _mss(self.display) as screen:
            shot = screen.grab(screen.monitors[0])
            mss.tools.to_png(shot.rgb, shot.size, output=str(path))
        return Path(path)

    def settle(self, *, quiet_s: float = 0.15, timeout: float = 5.0) -> None:
        """Wait until the screen has not changed for ``quiet_s`` (a redraw has finished)."""
        deadline = time.monotonic() + timeout
        with _mss(self.display) as screen:
            last = bytes(screen.grab(screen.monitors[0]).raw)
            quiet_since = time.monotonic()
            while time.monotonic() - quiet_since < quiet_s:
                if time.monotonic() > deadline:
                    raise DesktopError(f"the screen kept changing for {timeout} s")
                time.sleep(0.03)
                now = bytes(screen.grab(screen.monitors[0]).raw)
                if now != last:
                    last, quiet_since = now, time.monotonic()

    def run(self, argv: Sequence[str], *, timeout: float = 10.0) -> str:
        """Run a command against this desktop; its stdout, or an error with its stderr."""
        done = subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            raise DesktopError(f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    # ------------------------------------------------------------ start / stop

    def _spawn(
        self, name: str, argv: list[str], *, env: dict[str, str] | None = None, **popen: Any
    ) -> _Component:
        log = self.root / "logs" / f"{name}-{len(self.components)}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                argv,
                env=self.env if env is None else {**env, MARKER: self.token},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                cwd=self.root,
                **popen,
            )
        component = _Component(name, process, log)
        self.components.append(component)
        return component

    def _failure(self, component: _Component, reason: str) -> DesktopError:
        status = component.process.poll()
        exited = "" if status is None else f", exited with status {status}"
        detail = component.log.read_text(errors="replace").strip()[-4000:] or "(no output)"
        return DesktopError(f"{component.name} did not start: {reason}{exited}\n{detail}")

    def _read_fd_line(self, component: _Component, fd: int) -> str:
        """The first line a component writes to ``fd`` (its -displayfd / --print-address)."""
        data = b""
        deadline = time.monotonic() + START_TIMEOUT_S
        while not data.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._failure(component, f"nothing announced within {START_TIMEOUT_S} s")
            ready, _, _ = select.select([fd], [], [], min(remaining, 0.1))
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise self._failure(component, "closed its announcement pipe")
                data += chunk
            elif component.process.poll() is not None:
                raise self._failure(component, "exited early")
        return data.decode().strip()

    def _wait(self, condition: Any, what: str, component: _Component | None = None) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not condition():
            if component is not None and component.process.poll() is not None:
                raise self._failure(component, f"exited before {what}")
            if time.monotonic() > deadline:
                if component is not None:
                    raise self._failure(component, f"not {what} within {START_TIMEOUT_S} s")
                raise DesktopError(f"not {what} within {START_TIMEOUT_S} s")
            time.sleep(0.02)

    def _start_x(self, display: str = "") -> None:
        """Xvfb on ``display`` (":N"), or on the first free number when none is given."""
        read_fd, write_fd = os.pipe()
        try:
            # -noreset: the server must not wipe its state when the last client leaves.
            # With a display named, -displayfd still announces it once the server is ready.
            argv = [require("Xvfb"), *([display] if display else [])]
            argv += ["-displayfd", str(write_fd), "-nolisten", "tcp", "-noreset"]
            argv += ["-screen", "0", f"{self.size[0]}x{self.size[1]}x24"]
            xvfb = self._spawn("Xvfb", argv, pass_fds=(write_fd,))
            os.close(write_fd)
            write_fd = -1
            self.display = f":{self._read_fd_line(xvfb, read_fd)}"
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        self.env["DISPLAY"] = self.display

    def _start_bus(self) -> None:
        config = self.root / "session-bus.conf"
        config.write_text(_BUS_CONFIG.format(socket=self.root / "run" / "bus"))
        read_fd, write_fd = os.pipe()
        try:
            argv = [require("dbus-daemon"), f"--config-file={config}", "--nofork"]
            bus = self._spawn(
                "dbus-daemon", [*argv, f"--print-address={write_fd}"], pass_fds=(write_fd,)
            )
            os.close(write_fd)
            write_fd = -1
            self.bus_address = self._read_fd_line(bus, read_fd)
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        self.env["DBUS_SESSION_BUS_ADDRESS"] = self.bus_address

    def _start_window_manager(self) -> None:
        openbox = self._spawn("openbox", [require("openbox"), "--sm-disable"])
        self._wait(self._has_window_manager, "managing the screen", openbox)

    def _start_accessibility(self) -> None:
        launcher_path = require("/usr/libexec/at-spi-bus-launcher")
        launcher = self._spawn("at-spi-bus-launcher", [launcher_path, "--launch-immediately"])
        self._wait(
            lambda: name_has_owner(self.bus_address, "org.a11y.Bus"),
            "owning org.a11y.Bus",
            launcher,
        )
        a11y_address = accessibility_enabled(self.bus_address)
        # Waking the registry now (it is D-Bus-activated on the accessibility bus) makes a
        # broken AT-SPI install fail here, with the launcher's log, not in a test.
        try:
            call(
                a11y_address,
                "org.a11y.atspi.Registry",
                "/org/a11y/atspi/accessible/root",
                "org.a11y.atspi.Accessible",
                "GetChildren",
                timeout=START_TIMEOUT_S,
            )
        except DesktopError as error:
            raise self._failure(launcher, f"the AT-SPI registry did not answer: {error}") from None
        self.env["AT_SPI_BUS_ADDRESS"] = a11y_address

    def stop(self) -> None:
        """Close every window, stop every component and remove the desktop's folder."""
        for window in list(self.windows):
            self.close(window)
        for component in reversed(self.components):
            stop_group(component.process)
        self.components.clear()
        try:
            sweep(self.token)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    # -------------------------------------------------------------- X helpers

    def _root_property(self, name: str) -> list[int] | None:
        from Xlib import X, display, error

        try:
            connection = display.Display(self.display)
        except Exception:
            return None
        try:
            atom = connection.intern_atom(name)
            prop = connection.screen().root.get_full_property(atom, X.AnyPropertyType)
            return None if prop is None else list(prop.value)
        except error.XError:
            return None
        finally:
            connection.close()

    def _has_window_manager(self) -> bool:
        return bool(self._root_property("_NET_SUPPORTING_WM_CHECK"))

    def _client_list(self) -> list[int]:
        return self._root_property("_NET_CLIENT_LIST") or []


D = TypeVar("D", bound=Desktop)


@overload
def headless_desktop(
    *, size: tuple[int, int] = (WIDTH, HEIGHT)
) -> contextlib.AbstractContextManager[Desktop]: ...


@overload
def headless_desktop(
    factory: type[D], *, size: tuple[int, int] = (WIDTH, HEIGHT)
) -> contextlib.AbstractContextManager[D]: ...


def headless_desktop(
    factory: type[Desktop] = Desktop, *, size: tuple[int, int] = (WIDTH, HEIGHT)
) -> contextlib.AbstractContextManager[Any]:
    """Start the desktop (see the module docstring), yield it, and stop all of it.

    ``factory`` is the class of the desktop yielded (a subclass adding services); ``size``
    the X screen's (cut it into monitors with ``set_monitors``).
    """
    return _running(factory, size)


@contextlib.contextmanager
def _running(factory: type[D], size: tuple[int, int]) -> Iterator[D]:
    for binary in PACKAGES:
        require(binary)
    sweep_orphans()
    token = f"{os.getpid()}-{secrets.token_hex(8)}"
    root = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
    for folder in ("logs", "home", "run", "config", "cache", "data"):
        (root / folder).mkdir(mode=0o700)
    env = {name: os.environ[name] for name in INHERITED if name in os.environ}
    env.update(
        {
            MARKER: token,
            "HOME": str(root / "home"),
            "XDG_RUNTIME_DIR": str(root / "run"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_CACHE_HOME": str(root / "cache"),
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_SESSION_TYPE": "x11",
            "GDK_BACKEND": "x11",
            "LANG": os.environ.get("LANG") or "C.UTF-8",
            # GTK 3 loads its AT-SPI bridge by itself unless NO_AT_BRIDGE is set (it is not
            # inherited), so GTK_MODULES is not needed: it would only add "Failed to load
            # module" warnings. Qt publishes its tree only when asked to.
            "QT_ACCESSIBILITY": "1",
            # Keep GTK from asking the (absent) dconf and gvfs services on every start.
            "GSETTINGS_BACKEND": "memory",
            "GIO_USE_VFS": "local",
        }
    )
    desk = factory(root=root, token=token, env=env, size=size)
    try:
        desk._start_x()
        desk._start_bus()
        desk._start_window_manager()
        desk._start_accessibility()
        yield desk
    finally:
        desk.stop()


def _mss(display: str) -> Any:
    import mss

    # mss >= 10.2 names the class MSS; older versions only have the factory.
    return (getattr(mss, "MSS", None) or mss.mss)(display=display)


def _set_monitor_request() -> Any:
    """RandR 1.5's SetMonitor, its MonitorInfo laid out flat: python-xlib 0.33's own
    ``xrandr_set_monitor`` cannot pack the nested structure it declares."""
    from Xlib.protocol import rq

    class SetMonitor(rq.Request):  # type: ignore[misc]  # python-xlib has no types
        _request = rq.Struct(
            rq.Card8("opcode"),
            rq.Opcode(43),
            rq.RequestLength(),
            rq.Window("window"),
            rq.Card32("name"),
            rq.Bool("primary"),
            rq.Bool("automatic"),
            rq.LengthOf("outputs", 2),
            rq.Int16("x"),
            rq.Int16("y"),
            rq.Card16("width"),
            rq.Card16("height"),
            rq.Card32("width_mm"),
            rq.Card32("height_mm"),
            rq.List("outputs", rq.Card32Obj),
        )

    return SetMonitor
