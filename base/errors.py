"""The one exception tree of Backscroll.

    BackscrollError                  every error a user or agent may see; one clear line
    ├── UsageError                   bad input: a time expression, a query, a config value, an id
    │   ├── TimeExpressionError              a time expression that is not one of the accepted forms
    │   ├── QueryError               a malformed search query
    │   └── ConfigError              an invalid config key or value
    ├── NotFoundError                a frame id or file that does not exist
    ├── StoreError                   the store on disk is unusable
    │   ├── CorruptionError          a segment or view whose bytes fail their checks
    │   ├── DecryptionError          a ciphertext that does not open (wrong key, tampered, moved)
    │   ├── DiskFullError            the disk has no room for a write; nothing was lost
    │   └── LockedError              another process holds a lock this operation needs
    ├── KeyUnavailableError          the encryption key is missing, changed or unreachable
    └── CaptureError                 the platform cannot capture (no display, missing OCR)

The CLI catches only ``BackscrollError`` and prints its message on one line; tracebacks are
never shown with local variables, since locals hold screen text and keys.
"""

from __future__ import annotations

import errno
import os


class BackscrollError(Exception):
    """Base class: ``str(error)`` is a complete one-line message for a person."""


class UsageError(BackscrollError):
    pass


class TimeExpressionError(UsageError):
    pass


class QueryError(UsageError):
    pass


class ConfigError(UsageError):
    pass


class NotFoundError(BackscrollError):
    pass


class StoreError(BackscrollError):
    pass


class CorruptionError(StoreError):
    """Bytes on disk failed their checks (a segment header, say); the message names them."""


class DecryptionError(StoreError):
    """Callers show the frame with empty text or no image and carry on."""


class LockedError(StoreError):
    pass


class DiskFullError(StoreError):
    """A write found no room. Whatever it was writing was not acknowledged, so nothing that
    was is lost; reading goes on."""

    def __init__(self, path: os.PathLike[str] | str, doing: str = "write") -> None:
        try:
            # shutil.disk_usage's "free", without shutil (and the compressors it imports)
            # on every command's start-up path.
            room = os.statvfs(path)
            free = f"{room.f_bavail * room.f_frsize:,} bytes free"
        except OSError:
            free = "free space unknown"
        super().__init__(
            f"the disk is full ({free} for {path}): could not {doing}; nothing stored was "
            "lost; free some space (or `backscroll clear`) and run it again"
        )


def is_text(value: str) -> bool:
    """Whether ``value`` is text that can be stored: no lone surrogates (bytes that were not
    UTF-8 reach Python as those, through argv or a file read with surrogateescape)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_disk_full(exc: BaseException) -> bool:
    """An out-of-space error, as the OS raises it or as Tantivy reports one (a ValueError
    naming Rust's ``StorageFull``)."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    text = str(exc)
    return isinstance(exc, ValueError) and ("StorageFull" in text or "No space left" in text)


class KeyUnavailableError(BackscrollError):
    """The master key is missing, has changed, or its store is locked or unreachable."""


class CaptureError(BackscrollError):
    pass
