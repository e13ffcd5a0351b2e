"""The archive's use cases (``export --archive``, ``import --archive``): one file holding the
whole store, sealed under a passphrase, to move it to a new machine."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from backscroll.contract.answers import Answer
from backscroll.contract.requests import Request, Text
from backscroll.contract.words import ARCHIVE_IN, ARCHIVE_OUT, PASSPHRASE_FILE

PassphraseFile = Annotated[Text, Meta(description=PASSPHRASE_FILE)]


class _ArchiveRequest(Request):
    file_names = frozenset({"archive", "passphrase_file"})
    archive: str
    passphrase_file: str

    def check(self) -> None:
        super().check()
        for name in ("archive", "passphrase_file"):
            if "\x00" in getattr(self, name):
                raise ValueError(f"{name}: must not hold a NUL character (no file name can)")


class ArchiveExportRequest(_ArchiveRequest):
    archive: Annotated[Text, Meta(description=ARCHIVE_OUT)]
    passphrase_file: PassphraseFile


class ArchiveImportRequest(_ArchiveRequest):
    archive: Annotated[Text, Meta(description=ARCHIVE_IN)]
    passphrase_file: PassphraseFile


class ArchiveExportAnswer(Answer, kw_only=True, tag="export_archive"):
    path: str
    events: int
    """Events of the log written, frames included."""
    frames: int
    thumbnails: int
    bytes: int
    left_out: int
    """Frames a deletion hides (their purge not complete yet): never written."""
    unreadable: int
    """Events that do not decode, and frames whose text or thumbnail does not open with the
    key: the first are left out, the second written without what does not open."""


class ArchiveImportAnswer(Answer, kw_only=True, tag="import_archive"):
    home: str
    events: int
    frames: int
    thumbnails: int
