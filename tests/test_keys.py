from __future__ import annotations

import base64
import contextlib
import gc
import hmac
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import pytest
from keyring.backends import fail
from keyring.errors import PasswordDeleteError

from backscroll import keys
from backscroll.keys import fingerprint, key_status, load_key
from base.errors import KeyUnavailableError
from tests.keyring_daemon import (
    KeyringDaemon,
    SessionBus,
    client_env,
    lock_collection,
    missing_daemons,
    private_session_bus,
    start_keyring,
)

REPO = Path(__file__).resolve().parent.parent


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _keyinfo(home: Path) -> dict[str, str]:
    data: dict[str, str] = json.loads((home / "keyinfo.json").read_text())
    return data


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A keyring backend in a dict, for choosing-the-store tests that need no daemon."""

    @keyring.backend.properties.classproperty
    def priority(cls) -> float:
        # Never chosen by keyring's own backend discovery, only through set_keyring.
        raise RuntimeError("test backend")

    def __init__(self) -> None:
        super().__init__()
        self.secrets: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.secrets.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.secrets[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.secrets.pop((service, username), None) is None:
            raise PasswordDeleteError("no such password")


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    # Leave keyring unresolved-but-failing: the next user re-resolves (see keys._keyring_backend).
    keyring.set_keyring(fail.Keyring())


@pytest.fixture
def default_home(backscroll_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's home, treated as if it were ~/.backscroll."""
    monkeypatch.setattr(keys, "is_default_home", lambda home: home == backscroll_home)
    return backscroll_home


# -- the file store -------------------------------------------------------------------------


def test_a_new_key_in_a_custom_home_goes_to_a_private_key_file(backscroll_home: Path) -> None:
    key = load_key(backscroll_home, create=True)
    assert key is not None and len(key) == 32
    assert _mode(backscroll_home) == 0o700
    assert _mode(backscroll_home / "key") == 0o600
    assert _mode(backscroll_home / "keyinfo.json") == 0o600
    assert _keyinfo(backscroll_home) == {"store": "file", "fingerprint": fingerprint(key)}
    assert base64.b64decode((backscroll_home / "key").read_text()) == key


def test_a_home_without_a_key_has_none_and_nothing_is_created(backscroll_home: Path) -> None:
    assert load_key(backscroll_home, create=False) is None
    assert not backscroll_home.exists()


def test_the_same_key_and_fingerprint_come_back_on_every_load(backscroll_home: Path) -> None:
    key = load_key(backscroll_home, create=True)
    assert load_key(backscroll_home, create=False) == key
    assert load_key(backscroll_home, create=True) == key
    assert (
        key_status(backscroll_home).fingerprint
        == fingerprint(key)
        == _keyinfo(backscroll_home)["fingerprint"]
    )


def test_the_fingerprint_is_16_hex_of_an_hmac_and_reveals_nothing_else() -> None:
    key = bytes(32)
    expected = hmac.digest(key, b"backscroll fingerprint", "sha256").hex()[:16]
    assert fingerprint(key) == expected
    assert fingerprint(bytes(31) + b"\1") != expected


def test_a_deleted_key_file_is_reported_and_never_replaced(backscroll_home: Path) -> None:
    key = load_key(backscroll_home, create=True)
    assert key is not None
    (backscroll_home / "key").unlink()
    for create in (False, True):
        with pytest.raises(KeyUnavailableError, match=r"missing from the key file .*no new key"):
            load_key(backscroll_home, create=create)
    assert not (backscroll_home / "key").exists()
    assert _keyinfo(backscroll_home)["fingerprint"] == fingerprint(key)


def test_a_replaced_key_file_is_reported_as_changed(backscroll_home: Path) -> None:
    key = load_key(backscroll_home, create=True)
    assert key is not None
    (backscroll_home / "key").write_text(base64.b64encode(os.urandom(32)).decode())
    with pytest.raises(KeyUnavailableError, match=r"has changed \(fingerprint \w{16}, .*expects"):
        load_key(backscroll_home, create=True)


def test_a_garbled_key_file_is_reported(backscroll_home: Path) -> None:
    load_key(backscroll_home, create=True)
    (backscroll_home / "key").write_text("not a key")
    with pytest.raises(KeyUnavailableError, match="does not hold a valid 32-byte key"):
        load_key(backscroll_home, create=False)


def test_a_damaged_keyinfo_is_reported_and_the_key_is_left_alone(backscroll_home: Path) -> None:
    load_key(backscroll_home, create=True)
    key_file = (backscroll_home / "key").read_bytes()
    (backscroll_home / "keyinfo.json").write_text("{not json")
    with pytest.raises(KeyUnavailableError, match=r"keyinfo\.json is damaged"):
        load_key(backscroll_home, create=True)
    assert (backscroll_home / "key").read_bytes() == key_file


def test_a_key_file_left_without_keyinfo_is_adopted_not_overwritten(backscroll_home: Path) -> None:
    # A crash between writing the key and writing keyinfo.json leaves exactly this.
    key = load_key(backscroll_home, create=True)
    (backscroll_home / "keyinfo.json").unlink()
    assert load_key(backscroll_home, create=False) is None
    assert load_key(backscroll_home, create=True) == key
    assert _keyinfo(backscroll_home)["store"] == "file"


def test_processes_creating_the_key_at_once_agree_on_one(backscroll_home: Path) -> None:
    script = (
        "import sys; from pathlib import Path; from backscroll.keys import load_key, fingerprint;"
        "print(fingerprint(load_key(Path(sys.argv[1]), create=True)))"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(backscroll_home)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    printed = {process.communicate(timeout=60)[0].strip() for process in processes}
    assert all(process.returncode == 0 for process in processes)
    assert printed == {_keyinfo(backscroll_home)["fingerprint"]}


# -- status ---------------------------------------------------------------------------------


def test_status_of_a_home_without_a_key(backscroll_home: Path) -> None:
    assert key_status(backscroll_home) == keys.KeyStatus(
        store=None, fingerprint=None, available=False, problem=None, weak=False
    )


def test_status_of_a_file_key_says_it_is_weak(backscroll_home: Path) -> None:
    key = load_key(backscroll_home, create=True)
    assert key is not None
    assert key_status(backscroll_home) == keys.KeyStatus(
        store="file", fingerprint=fingerprint(key), available=True, problem=None, weak=True
    )


def test_status_reports_a_missing_key_without_raising(backscroll_home: Path) -> None:
    load_key(backscroll_home, create=True)
    (backscroll_home / "key").unlink()
    status = key_status(backscroll_home)
    assert status.store == "file" and not status.available
    assert status.problem is not None and "missing" in status.problem
    assert "\n" not in status.problem


def test_status_reports_a_damaged_keyinfo_without_raising(backscroll_home: Path) -> None:
    backscroll_home.mkdir()
    (backscroll_home / "keyinfo.json").write_text("[]")
    status = key_status(backscroll_home)
    assert not status.available and status.problem is not None


# -- choosing the store ---------------------------------------------------------------------


def test_a_custom_home_uses_the_file_store_even_with_a_keyring(
    backscroll_home: Path, memory_keyring: MemoryKeyring
) -> None:
    load_key(backscroll_home, create=True)
    assert _keyinfo(backscroll_home)["store"] == "file"
    assert memory_keyring.secrets == {}


def test_the_default_home_uses_a_usable_keyring(
    default_home: Path, memory_keyring: MemoryKeyring
) -> None:
    key = load_key(default_home, create=True)
    assert key is not None
    assert _keyinfo(default_home)["store"] == "keyring"
    assert not (default_home / "key").exists()
    secret = memory_keyring.secrets[("backscroll", "memory-key")]
    assert base64.b64decode(secret) == key
    assert key_status(default_home).weak is False


def test_the_default_home_falls_back_to_the_file_store_without_a_keyring(
    default_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyring.core, "init_backend", lambda: keyring.set_keyring(fail.Keyring()))
    keyring.set_keyring(fail.Keyring())
    load_key(default_home, create=True)
    assert _keyinfo(default_home)["store"] == "file"


def test_a_forced_file_store_wins_over_a_keyring(
    default_home: Path, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "file")
    load_key(default_home, create=True)
    assert _keyinfo(default_home)["store"] == "file"
    assert memory_keyring.secrets == {}


def test_a_forced_keyring_store_applies_to_a_custom_home(
    backscroll_home: Path, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keyring")
    key = load_key(backscroll_home, create=True)
    assert _keyinfo(backscroll_home)["store"] == "keyring"
    assert key is not None
    assert base64.b64decode(memory_keyring.secrets[("backscroll", "memory-key")]) == key


def test_a_key_already_in_the_keyring_is_adopted_not_overwritten(
    tmp_path: Path, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The keyring entry is per user: a second home kept there must share it, since
    # overwriting it would make the first home's encrypted frames unreadable.
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keyring")
    first = load_key(tmp_path / "first", create=True)
    second = load_key(tmp_path / "second", create=True)
    assert first == second


def test_once_recorded_the_store_is_not_chosen_again(
    backscroll_home: Path, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keyring")
    key = load_key(backscroll_home, create=True)
    monkeypatch.delenv("BACKSCROLL_KEYSTORE")
    # A custom home would pick the file store for a new key; this one's key is in the keyring.
    assert load_key(backscroll_home, create=True) == key
    assert not (backscroll_home / "key").exists()


def test_a_forced_store_that_contradicts_keyinfo_is_an_error(
    backscroll_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_key(backscroll_home, create=True)
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keyring")
    with pytest.raises(KeyUnavailableError, match=r"BACKSCROLL_KEYSTORE=keyring, but .*key file"):
        load_key(backscroll_home, create=True)


@pytest.mark.skipif(sys.platform == "darwin", reason="the Keychain exists on macOS")
def test_the_keychain_store_off_macos_is_a_clear_error(
    backscroll_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keychain")
    with pytest.raises(KeyUnavailableError, match="only on macOS"):
        load_key(backscroll_home, create=True)
    assert not backscroll_home.exists()


def test_an_unknown_keystore_is_a_clear_error(
    backscroll_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "vault")
    with pytest.raises(KeyUnavailableError, match="expected one of keychain, keyring, file"):
        load_key(backscroll_home, create=True)


def test_a_keyring_that_never_answers_times_out_as_unavailable(
    backscroll_home: Path, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    monkeypatch.setattr(memory_keyring, "get_password", lambda *args: release.wait(10))
    monkeypatch.setattr(keys, "KEYRING_TIMEOUT_S", 0.1)
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keyring")
    try:
        with pytest.raises(KeyUnavailableError, match=r"did not answer within 0\.1 s"):
            load_key(backscroll_home, create=True)
    finally:
        release.set()
    assert not (backscroll_home / "keyinfo.json").exists()


def test_encryption_is_available_with_cryptography_installed() -> None:
    assert keys.ENCRYPTION_AVAILABLE is True


def test_without_cryptography_encryption_is_reported_unavailable() -> None:
    # None in sys.modules makes every `import cryptography...` raise ImportError.
    script = (
        "import sys; sys.modules['cryptography'] = None\n"
        "from backscroll.keys import ENCRYPTION_AVAILABLE\n"
        "from backscroll.crypto import FrameCrypto\n"
        "from base.errors import StoreError\n"
        "try:\n"
        "    FrameCrypto(bytes(32))\n"
        "except StoreError as error:\n"
        "    print(ENCRYPTION_AVAILABLE, error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.startswith("False encryption needs the cryptography package")


def test_status_reports_encryption_unavailable_without_cryptography(
    backscroll_home: Path,
) -> None:
    """What status says is found without importing cryptography, and says the same."""
    script = (
        "import sys; sys.modules['cryptography'] = None\n"
        "from backscroll.cli import main\n"
        "sys.argv = ['backscroll', 'status', '--json']\n"
        "main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout)["encryption_available"] is False
    assert keys.encryption_installed() is True


def test_importing_keys_does_not_import_cryptography_or_keyring() -> None:
    # `backscroll status` imports this module; both libraries cost tens of ms to import.
    script = (
        "import sys, backscroll.keys, backscroll.crypto;"
        "print(sorted(m for m in ('cryptography', 'keyring') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# -- a real Secret Service: gnome-keyring on a private D-Bus --------------------------------


class RealKeyring:
    """A private bus and keyring daemon; ``env`` is what a keyring client needs."""

    def __init__(self, bus: SessionBus, daemon: KeyringDaemon, env: dict[str, str]) -> None:
        self.bus = bus
        self.daemon = daemon
        self.env = env

    def stop(self) -> None:
        self.daemon.stop()
        self.bus.stop()

    def run(self, code: str) -> str:
        """Run ``code`` in a fresh Python process that talks to this keyring."""
        result = subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()


def _start_real_keyring(folder: Path) -> RealKeyring:
    # A missing daemon fails the test, never skips it: CI installs both binaries.
    if missing := missing_daemons():
        pytest.fail("; ".join(missing), pytrace=False)
    bus = private_session_bus()
    try:
        daemon = start_keyring({**os.environ, "DBUS_SESSION_BUS_ADDRESS": bus.address})
    except BaseException:
        bus.stop()
        raise
    return RealKeyring(bus, daemon, client_env(os.environ, bus.address, folder))


@contextlib.contextmanager
def _talking_to(real: RealKeyring) -> Iterator[None]:
    """Point this process's keyring package at ``real``, and restore it afterwards.

    In-process use works without a subprocess: the Secret Service backend opens a new D-Bus
    connection per call, reading DBUS_SESSION_BUS_ADDRESS then; only keyring's choice of
    backend is made once per process, so it is made again here.
    """
    with pytest.MonkeyPatch.context() as patch:
        for name in ("DBUS_SESSION_BUS_ADDRESS", "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
            patch.setenv(name, real.env[name])
        patch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
        # keyring caches its list of viable backends too (a jaraco `once` function).
        with contextlib.suppress(KeyError):  # raised when nothing is cached yet
            keyring.backend.get_all_keyring.reset()
        keyring.core.init_backend()
        try:
            yield
        finally:
            # The entry is per user, so tests sharing the daemon would adopt each other's key.
            with contextlib.suppress(Exception):
                keyring.delete_password("backscroll", "memory-key")
    keyring.set_keyring(fail.Keyring())


@pytest.fixture(scope="session")
def shared_keyring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKeyring]:
    real = _start_real_keyring(tmp_path_factory.mktemp("keyring-client"))
    yield real
    real.stop()


@pytest.fixture
def real_keyring(shared_keyring: RealKeyring) -> Iterator[RealKeyring]:
    with _talking_to(shared_keyring):
        yield shared_keyring


@pytest.fixture
def own_keyring(tmp_path: Path) -> Iterator[RealKeyring]:
    """A keyring daemon of the test's own, for tests that lock or stop it."""
    real = _start_real_keyring(tmp_path / "keyring-client")
    try:
        with _talking_to(real):
            yield real
    finally:
        real.stop()
        # The sockets keyring leaks sit in reference cycles: collect them while this test's
        # warning filter (keyring_leaks_a_socket) applies, not during some later test.
        gc.collect()


def _load_in_fresh_process(real: RealKeyring, home: Path) -> str:
    """Load the key in a new process: its fingerprint, or the one-line error it reports."""
    return real.run(
        "import sys; from pathlib import Path\n"
        "from base.errors import KeyUnavailableError\n"
        "from backscroll.keys import fingerprint, load_key\n"
        "try:\n"
        f"    print(fingerprint(load_key(Path({str(home)!r}), create=False)))\n"
        "except KeyUnavailableError as error:\n"
        "    print(error)\n"
    )


# keyring's Secret Service backend leaves its D-Bus socket open when a call fails (locked
# collection, vanished service); Python closes it and warns. Not ours to fix, and harmless.
keyring_leaks_a_socket = pytest.mark.filterwarnings("ignore:unclosed <socket:ResourceWarning")

READ_SECRET = "import keyring; print(keyring.get_password('backscroll', 'memory-key'))"


@pytest.mark.desktop
def test_a_forced_keyring_store_keeps_the_key_in_the_secret_service(
    backscroll_home: Path, real_keyring: RealKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keyring")
    key = load_key(backscroll_home, create=True)
    assert key is not None
    assert _keyinfo(backscroll_home) == {"store": "keyring", "fingerprint": fingerprint(key)}
    assert not (backscroll_home / "key").exists()
    # Read back by a process that shares nothing with this one but the bus: the secret is
    # in the daemon, and a later run (without the override) finds the same key.
    assert base64.b64decode(real_keyring.run(READ_SECRET)) == key
    backend = real_keyring.run("import keyring; print(type(keyring.get_keyring()).__module__)")
    assert backend == "keyring.backends.SecretService"
    assert _load_in_fresh_process(real_keyring, backscroll_home) == fingerprint(key)
    assert (real_keyring.daemon.data_dir / "keyrings" / "login.keyring").exists()
    assert key_status(backscroll_home) == keys.KeyStatus(
        store="keyring", fingerprint=fingerprint(key), available=True, problem=None, weak=False
    )


@pytest.mark.desktop
def test_the_default_home_keeps_its_key_in_a_running_secret_service(
    default_home: Path, real_keyring: RealKeyring
) -> None:
    key = load_key(default_home, create=True)
    assert key is not None
    assert _keyinfo(default_home)["store"] == "keyring"
    assert base64.b64decode(real_keyring.run(READ_SECRET)) == key


@pytest.mark.desktop
def test_a_key_deleted_from_the_keyring_is_reported_not_replaced(
    backscroll_home: Path, real_keyring: RealKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keyring")
    load_key(backscroll_home, create=True)
    keyring.delete_password("backscroll", "memory-key")
    for create in (False, True):
        with pytest.raises(KeyUnavailableError, match="missing from the system keyring"):
            load_key(backscroll_home, create=create)
    assert real_keyring.run(READ_SECRET) == "None"


@pytest.mark.desktop
def test_a_changed_key_in_the_keyring_is_reported(
    backscroll_home: Path, real_keyring: RealKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keyring")
    load_key(backscroll_home, create=True)
    keyring.set_password("backscroll", "memory-key", base64.b64encode(os.urandom(32)).decode())
    with pytest.raises(KeyUnavailableError, match=r"in the system keyring .* has changed"):
        load_key(backscroll_home, create=False)


@pytest.mark.desktop
@keyring_leaks_a_socket
def test_a_stopped_keyring_daemon_makes_the_key_unavailable(
    backscroll_home: Path, own_keyring: RealKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keyring")
    load_key(backscroll_home, create=True)
    own_keyring.daemon.stop()
    with pytest.raises(KeyUnavailableError, match="system keyring is unreachable"):
        load_key(backscroll_home, create=True)
    status = key_status(backscroll_home)
    assert not status.available
    assert status.problem is not None and "unreachable" in status.problem
    # A process started after the daemon went away finds no usable backend at all.
    assert "system keyring is unreachable" in _load_in_fresh_process(own_keyring, backscroll_home)
    assert _keyinfo(backscroll_home)["store"] == "keyring"


@pytest.mark.desktop
@keyring_leaks_a_socket
def test_a_vanished_session_bus_makes_the_key_unavailable(
    backscroll_home: Path, own_keyring: RealKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keyring")
    load_key(backscroll_home, create=True)
    own_keyring.stop()
    with pytest.raises(KeyUnavailableError, match="system keyring is unreachable"):
        load_key(backscroll_home, create=False)


@pytest.mark.desktop
@keyring_leaks_a_socket
def test_a_locked_keyring_makes_the_key_unavailable(
    backscroll_home: Path, own_keyring: RealKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_KEYSTORE", "keyring")
    key = load_key(backscroll_home, create=True)
    assert key is not None
    lock_collection(own_keyring.bus.address)
    # With no prompter on the bus, the unlock request is dismissed at once.
    with pytest.raises(KeyUnavailableError, match="system keyring is locked"):
        load_key(backscroll_home, create=True)
    status = key_status(backscroll_home)
    assert status.problem is not None and "locked" in status.problem
    assert _keyinfo(backscroll_home)["fingerprint"] == fingerprint(key)


@pytest.mark.desktop
@keyring_leaks_a_socket
def test_the_default_home_uses_the_file_store_when_no_secret_service_runs(
    default_home: Path, own_keyring: RealKeyring
) -> None:
    own_keyring.daemon.stop()
    # As in a process that started before any Secret Service: keys.py detects again.
    keyring.set_keyring(fail.Keyring())
    load_key(default_home, create=True)
    assert _keyinfo(default_home)["store"] == "file"
