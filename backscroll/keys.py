"""The master key: one random 32-byte key per store, kept in a key store, never replaced.

Key stores:

    keyring    the ``keyring`` package (Secret Service on Linux, Credential Manager on Windows),
               service "backscroll", account "memory-key"
    keychain   the macOS Keychain, through the same package (macOS only)
    file       ``<home>/key``, mode 0600; weaker: backups and sync tools can read it

``<home>/keyinfo.json`` records which store holds the key and its fingerprint. It is written
once, when the key is made; from then on every process and every later run uses that store
and checks the fingerprint, so a key that vanished or changed is reported (KeyUnavailableError)
and never silently replaced by a new one, which would make everything already encrypted
unreadable.

The store for a new key: ``BACKSCROLL_KEYSTORE`` if set; else the file store for a home other
than the default one (test and sandbox homes stay out of the user's keyring); else the keyring
when the ``keyring`` package has a usable backend; else the file store.

Both the key and its stores are imported lazily: ``keyring`` costs ~80 ms and
``cryptography`` ~45 ms at import, and ``backscroll status`` must start fast.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import hmac
import os
import secrets
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import msgspec

from base import jsontext
from base.errors import KeyUnavailableError
from base.fs import ensure_dir, write_atomic, write_new
from base.home import is_default_home

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend

__all__ = [
    "ENCRYPTION_AVAILABLE",
    "KEYSTORE_ENV",
    "KEY_BYTES",
    "STORES",
    "KeyStatus",
    "encryption_installed",
    "fingerprint",
    "key_status",
    "load_key",
]

KEY_BYTES = 32
KEYSTORE_ENV = "BACKSCROLL_KEYSTORE"
STORES = ("keychain", "keyring", "file")
KEYRING_SERVICE = "backscroll"
KEYRING_ACCOUNT = "memory-key"
KEY_FILE = "key"
KEYINFO_FILE = "keyinfo.json"
_LOCK_FILE = ".key.lock"

# A keyring call can block on an unlock prompt that nobody answers (a locked collection in a
# session whose prompter never shows); past this, report the keyring as unavailable rather
# than hang the capture daemon. Long enough for a person to type a password.
KEYRING_TIMEOUT_S = 60.0

_FINGERPRINT_LABEL = b"backscroll fingerprint"

ENCRYPTION_AVAILABLE: bool
"""False when ``cryptography`` cannot be imported; computed on first access (see __getattr__)."""

_encryption_available: bool | None = None


def __getattr__(name: str) -> Any:
    # ENCRYPTION_AVAILABLE is computed on first use, not at import: importing cryptography
    # costs ~45 ms, which the CLI's start-up path does not pay unless it asks.
    global _encryption_available
    if name == "ENCRYPTION_AVAILABLE":
        if _encryption_available is None:
            try:
                import cryptography.hazmat.primitives.ciphers.aead  # noqa: F401
            except ImportError:
                _encryption_available = False
            else:
                _encryption_available = True
        return _encryption_available
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def encryption_installed() -> bool:
    """Whether cryptography and its compiled core are installed, found without importing
    them: what ``status`` reports, for which the import was ~0.25x Python's own start.
    ``ENCRYPTION_AVAILABLE`` imports it, for a writer about to encrypt."""
    from importlib.util import find_spec

    try:
        return find_spec("cryptography.hazmat.bindings._rust") is not None
    except ImportError:  # a package above it is missing or cannot be imported
        return False


class KeyInfo(msgspec.Struct, frozen=True):
    """The contents of ``keyinfo.json``: no secret, only where the key is and how to know it."""

    store: str
    fingerprint: str


class KeyStatus(msgspec.Struct, frozen=True, kw_only=True):
    """What ``status`` shows about the key.

    ``store`` is None when no key has been made yet (``available`` is then False and
    ``problem`` None); ``problem`` is a one-line reason whenever a key exists but cannot be
    used; ``weak`` is True for the file store.
    """

    store: str | None
    fingerprint: str | None
    available: bool
    problem: str | None
    weak: bool


def fingerprint(key: bytes) -> str:
    """A non-secret name for ``key``: 64 bits of an HMAC, enough to tell two keys apart."""
    return hmac.digest(key, _FINGERPRINT_LABEL, "sha256")[:8].hex()


@overload
def load_key(home: Path, *, create: Literal[True]) -> bytes: ...
@overload
def load_key(home: Path, *, create: bool) -> bytes | None: ...


def load_key(home: Path, *, create: bool) -> bytes | None:
    """The master key of the store at ``home``.

    With ``create`` a key is made (and recorded in keyinfo.json) if the home has none yet;
    without it, None means the home has no key, so nothing in it is encrypted.

    Raises KeyUnavailableError when the recorded key is missing, has changed, or its store is
    locked or unreachable, and for a bad ``BACKSCROLL_KEYSTORE``.
    """
    forced = _forced_store()
    info = _read_keyinfo(home)
    if info is None:
        if not create:
            return None
        return _create_key(home, forced)
    return _load_recorded(home, info, forced)


def key_status(home: Path) -> KeyStatus:
    """The key's store, fingerprint and health, for ``status``; never raises."""
    try:
        info = _read_keyinfo(home)
    except Exception as error:
        return KeyStatus(
            store=None, fingerprint=None, available=False, problem=str(error), weak=False
        )
    if info is None:
        return KeyStatus(store=None, fingerprint=None, available=False, problem=None, weak=False)
    problem: str | None = None
    try:
        _load_recorded(home, info, _forced_store())
    except Exception as error:
        problem = str(error) or type(error).__name__
    return KeyStatus(
        store=info.store,
        fingerprint=info.fingerprint,
        available=problem is None,
        problem=problem,
        weak=info.store == "file",
    )


# -- choosing a store -----------------------------------------------------------------------


def _forced_store() -> str | None:
    # A bad value is a KeyUnavailableError, not a ConfigError: the daemon turns that class into
    # a paused-capture reason that `status` shows, rather than skipping frames one by one.
    value = os.environ.get(KEYSTORE_ENV, "").strip().lower()
    if not value:
        return None
    if value not in STORES:
        raise KeyUnavailableError(f"{KEYSTORE_ENV}={value!r}: expected one of {', '.join(STORES)}")
    if value == "keychain" and sys.platform != "darwin":
        raise KeyUnavailableError(
            f"{KEYSTORE_ENV}=keychain: the macOS Keychain exists only on macOS; "
            f"use keyring or file on {sys.platform}"
        )
    return value


def _uses_keyring(store: str) -> bool:
    # On macOS the keyring package's backend *is* the Keychain, so the two names are one store.
    return store in ("keyring", "keychain")


def _choose_store(home: Path, forced: str | None) -> str:
    if forced is not None:
        return forced
    if not is_default_home(home):
        return "file"
    try:
        _keyring_backend()
    except KeyUnavailableError:
        return "file"
    return "keychain" if sys.platform == "darwin" else "keyring"


def _describe(store: str, home: Path) -> str:
    if store == "file":
        return f"key file {home / KEY_FILE}"
    if store == "keychain":
        return "macOS Keychain"
    return f"system keyring (service {KEYRING_SERVICE!r}, account {KEYRING_ACCOUNT!r})"


# -- keyinfo.json ---------------------------------------------------------------------------


def _read_keyinfo(home: Path) -> KeyInfo | None:
    path = home / KEYINFO_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise KeyUnavailableError(f"cannot read {path}: {error.strerror}") from None
    try:
        info = jsontext.decode(data, KeyInfo)
    except msgspec.DecodeError as error:
        raise KeyUnavailableError(
            f"{path} is damaged ({error}); the key was not replaced"
        ) from None
    if info.store not in STORES:
        raise KeyUnavailableError(f"{path} names an unknown key store {info.store!r}")
    return info


# -- loading and making the key -------------------------------------------------------------


def _load_recorded(home: Path, info: KeyInfo, forced: str | None) -> bytes:
    if forced is not None and _uses_keyring(forced) != _uses_keyring(info.store):
        raise KeyUnavailableError(
            f"{KEYSTORE_ENV}={forced}, but this home's key is in the "
            f"{_describe(info.store, home)} ({KEYINFO_FILE}); unset {KEYSTORE_ENV} "
            f"or set it to {info.store}"
        )
    if info.store == "keychain" and sys.platform != "darwin":
        raise KeyUnavailableError(
            f"this home's key is in the macOS Keychain ({KEYINFO_FILE}), "
            f"which does not exist on {sys.platform}"
        )
    where = _describe(info.store, home)
    key = _read_secret(home, info.store)
    if key is None:
        raise KeyUnavailableError(
            f"the encryption key is missing from the {where} (expected fingerprint "
            f"{info.fingerprint}); encrypted text and thumbnails cannot be read until it is "
            f"restored, and no new key was made"
        )
    found = fingerprint(key)
    if not hmac.compare_digest(found, info.fingerprint):
        raise KeyUnavailableError(
            f"the encryption key in the {where} has changed (fingerprint {found}, "
            f"{KEYINFO_FILE} expects {info.fingerprint}); restore the original key"
        )
    return key


def _create_key(home: Path, forced: str | None) -> bytes:
    ensure_dir(home)
    with _creation_lock(home):
        # Another process may have made the key while we waited for the lock.
        info = _read_keyinfo(home)
        if info is not None:
            return _load_recorded(home, info, forced)
        store = _choose_store(home, forced)
        # A key already in the store (the keyring's entry is per user, shared by every home
        # kept there; a key file left by a crash before keyinfo.json was written) is adopted,
        # never overwritten: something may already be encrypted with it.
        key = _read_secret(home, store)
        if key is None:
            key = _write_new_secret(home, store, secrets.token_bytes(KEY_BYTES))
        write_atomic(home / KEYINFO_FILE, msgspec.json.encode(KeyInfo(store, fingerprint(key))))
        return key


@contextlib.contextmanager
def _creation_lock(home: Path) -> Iterator[None]:
    """Serialise key creation across processes (the daemon and a CLI may start together)."""
    fd = os.open(home / _LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _encode(key: bytes) -> str:
    return base64.b64encode(key).decode("ascii")


def _decode(text: str, where: str) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise KeyUnavailableError(f"the {where} does not hold a valid {KEY_BYTES}-byte key")
    return key


def _read_secret(home: Path, store: str) -> bytes | None:
    where = _describe(store, home)
    if store == "file":
        path = home / KEY_FILE
        try:
            text = path.read_text(encoding="ascii")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            raise KeyUnavailableError(f"cannot read the {where}: {error}") from None
        return _decode(text, where)
    backend = _keyring_backend()
    secret = _keyring_call(backend.get_password, KEYRING_SERVICE, KEYRING_ACCOUNT)
    return None if secret is None else _decode(secret, where)


def _write_new_secret(home: Path, store: str, key: bytes) -> bytes:
    """Store ``key`` and return it; if another writer got there first, return theirs."""
    if store != "file":
        backend = _keyring_backend()
        _keyring_call(backend.set_password, KEYRING_SERVICE, KEYRING_ACCOUNT, _encode(key))
        # Read back: a keyring that accepts writes but loses them must fail now, not after
        # frames were encrypted with a key nobody can load again.
        stored = _read_secret(home, store)
        if stored != key:
            raise KeyUnavailableError(f"the {_describe(store, home)} did not keep the new key")
        return key
    # write_new links the key file into place, so an existing key is never overwritten and
    # the key file appears complete or not at all.
    if write_new(home / KEY_FILE, (_encode(key) + "\n").encode("ascii")):
        return key
    existing = _read_secret(home, store)
    assert existing is not None
    return existing


# -- the keyring package --------------------------------------------------------------------


def _keyring_backend() -> KeyringBackend:
    """The keyring package's backend, or KeyUnavailableError if it has no usable one."""
    try:
        import keyring
        import keyring.backend
        import keyring.core
        from keyring.backends import fail, null
    except ImportError:
        raise KeyUnavailableError(
            "the keyring package is not installed; install it or set BACKSCROLL_KEYSTORE=file"
        ) from None
    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring):
        # keyring picks its backend once per process and caches the list of viable ones; the
        # Secret Service may have started since (a daemon launched before the desktop's
        # keyring), so forget both and ask again. Detection runs each backend's viability
        # check, which may raise if one that was viable has since gone away.
        # (reset() raises KeyError when nothing is cached yet.)
        with contextlib.suppress(AttributeError, KeyError):
            keyring.backend.get_all_keyring.reset()
        with contextlib.suppress(Exception):
            keyring.core.init_backend()
        backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring | null.Keyring):
        raise KeyUnavailableError(
            "the system keyring is unreachable (no Secret Service running or no keyring "
            "backend installed)"
        )
    return backend


_T = TypeVar("_T")


def _keyring_call(function: Callable[..., _T], *args: str) -> _T:
    """Run one keyring operation, turning its many failure types into KeyUnavailableError."""
    from keyring.errors import KeyringLocked

    outcome: list[_T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(function(*args))
        except BaseException as error:
            failure.append(error)

    # A worker thread so an unanswered unlock prompt cannot hang the caller (see the timeout).
    worker = threading.Thread(target=run, name="backscroll-keyring", daemon=True)
    worker.start()
    worker.join(KEYRING_TIMEOUT_S)
    if worker.is_alive():
        raise KeyUnavailableError(
            f"the system keyring did not answer within {KEYRING_TIMEOUT_S:g} s "
            f"(locked and waiting for an unlock prompt?)"
        )
    if not failure:
        return outcome[0]
    error = failure.pop()
    if not isinstance(error, Exception):
        raise error
    if isinstance(error, KeyringLocked):
        message = "the system keyring is locked; unlock it to use the key"
    else:
        # secretstorage reports a vanished Secret Service or bus with its own exception types
        # (and jeepney with OSError); all of them mean the same thing to us.
        message = f"the system keyring is unreachable: {str(error) or type(error).__name__}"
    # keyring leaves its D-Bus connection open when a call fails; the error's traceback is
    # what holds it, so let it go now rather than when our own exception is freed.
    del error
    raise KeyUnavailableError(message)
