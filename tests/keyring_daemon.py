"""A private D-Bus session bus and a real gnome-keyring daemon on it, for tests.

Nothing here can reach the user's real keyring: the bus is a fresh ``dbus-daemon`` with its
own socket, and the keyring daemon keeps its keyrings and control socket in a temporary
folder of its own. A client (the ``keyring`` package, ``secret-tool``) only needs
``DBUS_SESSION_BUS_ADDRESS`` pointing at the private bus.

    bus = private_session_bus()
    keyring = start_keyring({**os.environ, "DBUS_SESSION_BUS_ADDRESS": bus.address})
    ...
    keyring.stop()
    bus.stop()

Both handles are also context managers. A missing binary raises ``DaemonMissingError``,
which tests let fail loudly: CI installs ``dbus-daemon`` and ``gnome-keyring``.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

SECRETS_NAME = "org.freedesktop.secrets"
SECRETS_PATH = "/org/freedesktop/secrets"
SERVICE_IFACE = "org.freedesktop.Secret.Service"
LOGIN_COLLECTION = "/org/freedesktop/secrets/collection/login"
SYSTEM_SERVICE_DIR = Path("/usr/share/dbus-1/services")
DEFAULT_PASSWORD = "backscroll-test-password"

# Generous: a loaded CI machine can take a second or two to start either daemon.
START_TIMEOUT_S = 15.0

_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>unix:dir={socket_dir}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{service_dir}</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


class DaemonMissingError(RuntimeError):
    """A daemon binary the real-keyring tests need is not installed."""


# binary: the Debian/Ubuntu package that provides it
DAEMONS = {"dbus-daemon": "dbus-daemon", "gnome-keyring-daemon": "gnome-keyring"}


def _missing(binary: str) -> str:
    return (
        f"{binary} is not installed; the real-keyring tests need it "
        f"(Debian/Ubuntu: apt-get install {DAEMONS[binary]})"
    )


def missing_daemons() -> list[str]:
    """One message per daemon binary that is not on PATH; empty when all are there."""
    return [_missing(binary) for binary in DAEMONS if shutil.which(binary) is None]


def _require(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        raise DaemonMissingError(_missing(binary))
    return path


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _read_line(process: subprocess.Popen[bytes], timeout: float) -> str:
    """The first line ``process`` prints, without blocking past ``timeout``."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise TimeoutError(f"{process.args!r} printed nothing within {timeout} s")
    return process.stdout.readline().decode().strip()


class SessionBus:
    """A running private ``dbus-daemon --session``; ``address`` is its bus address."""

    def __init__(self, process: subprocess.Popen[bytes], address: str, folder: Path) -> None:
        self.process = process
        self.address = address
        self.folder = folder

    def stop(self) -> None:
        _stop_process(self.process)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def private_session_bus(activatable: Iterable[str] = ()) -> SessionBus:
    """Start a session bus of our own.

    D-Bus activation is off except for the service names in ``activatable`` (e.g.
    ``"org.a11y.Bus"``): with the system's service files, the first Secret Service call
    would auto-start a second, locked gnome-keyring and hide the very failures the tests
    stage (a stopped daemon must stay stopped).
    """
    binary = _require("dbus-daemon")
    folder = Path(tempfile.mkdtemp(prefix="backscroll-bus-"))
    service_dir = folder / "services"
    service_dir.mkdir()
    for name in activatable:
        shutil.copy(SYSTEM_SERVICE_DIR / f"{name}.service", service_dir)
    config = folder / "session.conf"
    config.write_text(_BUS_CONFIG.format(socket_dir=folder, service_dir=service_dir))
    process = subprocess.Popen(
        [binary, f"--config-file={config}", "--print-address", "--nofork"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        address = _read_line(process, START_TIMEOUT_S)
        if not address:
            raise RuntimeError(f"dbus-daemon exited with status {process.wait(timeout=5)}")
    except BaseException:
        _stop_process(process)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return SessionBus(process, address, folder)


def name_has_owner(address: str, name: str) -> bool:
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    bus = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus")
    bus = bus.with_interface("org.freedesktop.DBus")
    with open_dbus_connection(bus=address) as connection:
        reply = connection.send_and_get_reply(
            new_method_call(bus, "NameHasOwner", "s", (name,)), timeout=5
        )
    return bool(reply.body[0])


def lock_collection(address: str, collection: str = LOGIN_COLLECTION) -> None:
    """Lock a collection through ``org.freedesktop.Secret.Service.Lock``, as a screen lock would."""
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    service = DBusAddress(SECRETS_PATH, bus_name=SECRETS_NAME, interface=SERVICE_IFACE)
    with open_dbus_connection(bus=address) as connection:
        reply = connection.send_and_get_reply(
            new_method_call(service, "Lock", "ao", ([collection],)), timeout=5
        )
    locked, prompt = reply.body
    if collection not in locked or prompt != "/":
        raise RuntimeError(f"gnome-keyring did not lock {collection}: {reply.body!r}")


class KeyringDaemon:
    """A running ``gnome-keyring-daemon`` serving the Secret Service on one bus."""

    def __init__(self, process: subprocess.Popen[bytes], address: str, folder: Path) -> None:
        self.process = process
        self.address = address
        self.folder = folder

    @property
    def data_dir(self) -> Path:
        """Where its keyrings live (``keyrings/login.keyring``)."""
        return self.folder / "data"

    def stop(self) -> None:
        _stop_process(self.process)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_keyring(env: Mapping[str, str], password: str = DEFAULT_PASSWORD) -> KeyringDaemon:
    """Start gnome-keyring's Secret Service on the bus at ``env["DBUS_SESSION_BUS_ADDRESS"]``.

    ``--unlock`` reads ``password`` from stdin and creates (or unlocks) the "login"
    collection with it, which becomes the default collection clients write to. The daemon
    gets a private ``HOME``, ``XDG_DATA_HOME`` and ``XDG_RUNTIME_DIR`` whatever ``env``
    says: its control socket lives in the runtime dir, and sharing the user's would let
    ``--unlock`` talk to (and replace) the user's real keyring daemon.
    """
    binary = _require("gnome-keyring-daemon")
    address = env.get("DBUS_SESSION_BUS_ADDRESS")
    if not address:
        raise ValueError("start_keyring needs DBUS_SESSION_BUS_ADDRESS in env")
    folder = Path(tempfile.mkdtemp(prefix="backscroll-keyring-"))
    runtime = folder / "runtime"
    runtime.mkdir(mode=0o700)
    daemon_env = {
        **env,
        "HOME": str(folder),
        "XDG_DATA_HOME": str(folder / "data"),
        "XDG_CONFIG_HOME": str(folder / "config"),
        "XDG_RUNTIME_DIR": str(runtime),
    }
    # Without a display the daemon must never try to show a prompt window.
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "GNOME_KEYRING_CONTROL"):
        daemon_env.pop(name, None)
    # Output goes to a file, not a pipe nobody reads: a full pipe would stall the daemon.
    with open(folder / "daemon.log", "wb") as log:
        process = subprocess.Popen(
            [binary, "--foreground", "--unlock", "--components=secrets"],
            env=daemon_env,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        assert process.stdin is not None
        # The password is read to end of file, so closing stdin is part of the protocol.
        process.stdin.write(password.encode())
        process.stdin.close()
        _wait_for_name(process, address, SECRETS_NAME, folder / "daemon.log")
    except BaseException:
        _stop_process(process)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return KeyringDaemon(process, address, folder)


def _wait_for_name(process: subprocess.Popen[bytes], address: str, name: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not name_has_owner(address, name):
        if process.poll() is not None:
            detail = log.read_text(errors="replace").strip()
            raise RuntimeError(f"gnome-keyring-daemon exited ({process.returncode}): {detail}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} did not appear on {address} within {START_TIMEOUT_S} s")
        time.sleep(0.02)


def client_env(base: Mapping[str, str], address: str, folder: Path) -> dict[str, str]:
    """An environment for a keyring client on the private bus, with a throwaway ``HOME``.

    The ``keyring`` package reads its config (``keyringrc.cfg``) from the home folders and
    honours ``PYTHON_KEYRING_BACKEND``; both are neutralised so the Secret Service backend
    is chosen on its merits.
    """
    env = {
        key: value
        for key, value in base.items()
        if key not in {"PYTHON_KEYRING_BACKEND", "DISPLAY", "WAYLAND_DISPLAY"}
    }
    env.update(
        DBUS_SESSION_BUS_ADDRESS=address,
        HOME=str(folder),
        XDG_CONFIG_HOME=str(folder / "config"),
        XDG_DATA_HOME=str(folder / "data"),
        XDG_RUNTIME_DIR=str(folder / "runtime"),
    )
    os.makedirs(folder / "runtime", mode=0o700, exist_ok=True)
    return env
