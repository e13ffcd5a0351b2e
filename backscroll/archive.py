"""Moving a store to a new machine: the whole log in one file sealed under a passphrase
(``export --archive``), restored into a new home with a key of its own (``import --archive``).

The archive is the log's events at their offsets (``backscroll.archive_format``), every type
the log holds, so what a later version records travels without more code here. What is
sealed with the store's key is opened on the way out and sealed with the new store's key on
the way in, under the same id: frames' text and thumbnails (``_opened``, ``_sealed``) and
kept memories' text and value (``_opened_memory``, ``_sealed_memory``); an event type that
adds ciphertext must be handled there too (until then an export meeting one is refused,
never written with ciphertext bound to the old key, which would not open again). Left
behind, as they describe the old machine's files and not the person's memory: the key's own
events (the new store records its key) and the damage a rewrite found there (the bytes kept
aside are not carried). Frames a deletion hides and the versions of a forgotten memory are
never written, whether or not their erasure completed.

Restoring keeps every event at its offset, so a frame keeps its id and whatever cites one
(a tombstone's ``upto_id``, a purge's ``request_id``, a kept memory's source) still holds.
That is why an archive is restored into a new home, never merged into a store that has a
log of its own: merging would renumber frames, and a second import of the same file would
double everything.

Restoring is all or nothing: a first pass authenticates and decodes the whole archive,
checking every event against the types' constraints, before anything is written; the second
writes a complete store beside the home (``.<home>.import-<pid>``) and renames it into place,
the commit point. A wrong passphrase, a damaged archive or a crash leaves the home as it was;
a staging folder left by a crash is removed by the next import.
"""

from __future__ import annotations

import errno
import glob
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from backscroll.archive_format import DEFAULT_KDF, Item, Kdf, Reader, Writer
from base.errors import CorruptionError, DecryptionError, NotFoundError, UsageError
from base.fs import current, ensure_dir, fsync_dir, private_umask
from base.processes import pid_alive
from eventlog import codec
from eventlog.events import (
    FRAME_TYPE,
    TYPE_CODES,
    DamageDiscarded,
    DamageFound,
    FrameCaptured,
    FramesDeleted,
    KeyCreated,
    MemoryForgotten,
    MemoryKept,
    MemoryRevised,
)
from projector.state import Scope, matches, scope_of

if TYPE_CHECKING:
    from backscroll.crypto import FrameCrypto
    from backscroll.store import MemoryStore

LEFT_BEHIND = frozenset(TYPE_CODES[t] for t in (KeyCreated, DamageFound, DamageDiscarded))
DELETE_TYPE = TYPE_CODES[FramesDeleted]
FORGOTTEN_TYPE = TYPE_CODES[MemoryForgotten]
VERSION_TYPES = frozenset(TYPE_CODES[t] for t in (MemoryKept, MemoryRevised))
IMPORT_BATCH = 1000
MAX_PASSPHRASE = 4096
MIN_PASSPHRASE = 8
"""Characters a new archive's passphrase needs at least: it guards everything the screen
showed, offline, against as many guesses as an attacker's hardware allows (Argon2id only
makes each one cost)."""
STAGING = ".{name}.import-"

Progress = Callable[[int], None]


class ExportResult(msgspec.Struct, kw_only=True):
    path: Path
    events: int = 0
    frames: int = 0
    thumbnails: int = 0
    bytes: int = 0
    left_out: int = 0
    unreadable: int = 0


class ImportResult(msgspec.Struct, kw_only=True):
    home: Path
    events: int = 0
    frames: int = 0
    thumbnails: int = 0


# -- the passphrase -----------------------------------------------------------------------


def read_passphrase(path: Path, *, new: bool = False) -> bytes:
    """The passphrase in ``path``: its bytes without one final line break. Refused in one
    line: a file that is missing, empty, not a regular file, readable or writable by others
    (it unlocks everything the archive holds), larger than a passphrase, or, ``new``, too
    short to guard a new archive."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise NotFoundError(f"no such passphrase file: {path}") from None
    except OSError as exc:
        raise UsageError(f"cannot read the passphrase file {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"the passphrase file {path} is not a file")
    if info.st_mode & 0o077:
        raise UsageError(
            f"the passphrase file {path} can be read or written by others "
            f"(mode {stat.S_IMODE(info.st_mode):04o}): chmod 600 it first"
        )
    if info.st_size > MAX_PASSPHRASE:
        raise UsageError(
            f"the passphrase file {path} holds {info.st_size:,} bytes: a passphrase is at most "
            f"{MAX_PASSPHRASE:,}"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the passphrase file {path}: {exc.strerror}") from None
    passphrase = data.removesuffix(b"\n").removesuffix(b"\r")
    if not passphrase.strip():
        raise UsageError(f"the passphrase file {path} is empty: write the passphrase in it")
    if new and len(passphrase.decode("utf-8", "replace")) < MIN_PASSPHRASE:
        raise UsageError(
            f"the passphrase in {path} is shorter than {MIN_PASSPHRASE} characters: too short "
            "to guard an archive of everything on screen"
        )
    return passphrase


# -- export -------------------------------------------------------------------------------


def export_archive(
    store: MemoryStore,
    path: Path,
    passphrase: bytes,
    *,
    kdf: Kdf = DEFAULT_KDF,
    progress: Progress | None = None,
) -> ExportResult:
    """Write the store's log to a new archive at ``path`` (mode 0600; an existing file is
    never replaced). Reads only: the store may be a reader, with a daemon running. Written
    beside ``path`` and linked into place once whole, so no half archive bears its name."""
    if path.exists() or path.is_symlink():
        raise UsageError(f"{path} exists: an archive is written to a new file")
    if not path.parent.is_dir():
        raise NotFoundError(f"no such folder: {path.parent}")
    totals = store.state().totals()
    if totals.encrypted_text or totals.encrypted_thumbnails:
        _key_needed(store)
    end = store.log.next_offset()  # the archive holds the log as it is now
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(8)}.tmp")
    file = current().create(tmp, exclusive=True)
    try:
        try:
            writer = Writer(file, passphrase, kdf)
            result = ExportResult(path=path)
            for item in _items(store, end, result):
                writer.add(item)
                result.events += 1
                if progress and result.events % IMPORT_BATCH == 0:
                    progress(result.events)
            writer.close()
            file.fsync()
        finally:
            file.close()
        if next(iter(store.log.records(end, types={DELETE_TYPE, FORGOTTEN_TYPE})), None):
            # Its frames (or memory) may be in what was written: no copy of them may be left.
            raise UsageError(
                "a deletion or a forget was asked for while the archive was written: nothing "
                "was kept; export again"
            )
        current().link(tmp, path)
    except FileExistsError:
        raise UsageError(f"{path} exists: an archive is written to a new file") from None
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    result.bytes = writer.bytes
    return result


def _key_needed(store: MemoryStore) -> None:
    from backscroll import keys

    status = keys.key_status(store.home)
    if status.problem:
        raise UsageError(f"cannot export the encrypted frames: {status.problem}")


def _items(store: MemoryStore, end: int, result: ExportResult) -> Iterator[Item]:
    """Every event of the log before ``end`` as an item, frames opened, frames a deletion
    hides left out."""
    tombstones = sorted(
        (
            scope_of(e)
            for _, e in store.log.read(types={DELETE_TYPE})
            if isinstance(e, FramesDeleted)
        ),
        key=lambda scope: scope.upto_id,
    )
    forgotten = {
        e.memory_id
        for _, e in store.log.read(types={FORGOTTEN_TYPE})
        if isinstance(e, MemoryForgotten)
    }
    crypto = store.crypto
    for record in store.log.records():
        if record.offset >= end:
            return
        if record.type in LEFT_BEHIND:
            continue
        if record.type in VERSION_TYPES:
            try:
                version = codec.decode(record.payload)
            except (ValueError, KeyError, TypeError):
                result.unreadable += 1
                continue
            assert isinstance(version, MemoryKept | MemoryRevised)
            if version.memory_id in forgotten:  # its erasure may not have run yet
                result.left_out += 1
                continue
            yield _opened_memory(crypto, record.offset, version, result)
            continue
        if record.type != FRAME_TYPE:
            try:
                event = codec.decode(record.payload)
            except (ValueError, KeyError, TypeError):  # verify names it; the archive leaves it
                result.unreadable += 1
                continue
            if getattr(event, "ciphertext", b""):
                # Sealed with this store's key, which does not travel: carried as it is, it
                # would never open again. Refused until ``_opened`` and ``_sealed`` know it.
                raise UsageError(
                    f"the archive cannot carry {event.__struct_config__.tag} events sealed "
                    "with the store's key yet; nothing was written"
                )
            yield Item(record.offset, record.type, bytes(record.payload))
            continue
        try:
            frame = codec.decode(record.payload)
        except (ValueError, KeyError, TypeError):
            result.unreadable += 1
            continue
        assert isinstance(frame, FrameCaptured)
        # Frames come in increasing id: a tombstone below this one's id covers none after it.
        while tombstones and tombstones[0].upto_id < frame.frame_id:
            tombstones.pop(0)
        if _hidden(tombstones, frame):
            result.left_out += 1
            continue
        item = _opened(store, crypto, record.offset, frame, result)
        result.frames += 1
        result.thumbnails += item.jpeg is not None
        yield item


def _hidden(tombstones: list[Scope], frame: FrameCaptured) -> bool:
    return any(matches(scope, frame) for scope in tombstones)


def _opened(
    store: MemoryStore,
    crypto: FrameCrypto | None,
    offset: int,
    frame: FrameCaptured,
    result: ExportResult,
) -> Item:
    """The frame as an item: its text and thumbnail in the clear."""
    text = frame.text
    if frame.encrypted:
        try:
            text = _needed(crypto).decrypt_text(frame.frame_id, frame.ciphertext)
        except DecryptionError:
            result.unreadable += 1
            text = ""
    jpeg = None
    if frame.thumb is not None:
        try:
            data = (store.home / frame.thumb).read_bytes()
            jpeg = (
                _needed(crypto).decrypt_thumb(frame.frame_id, data)
                if frame.thumb_encrypted
                else data
            )
        except (FileNotFoundError, DecryptionError):
            result.unreadable += 1
    opened = msgspec.structs.replace(
        frame,
        text=text,
        ciphertext=b"",
        encrypted=False,
        blind_tokens=(),
        thumb=None,
        thumb_encrypted=False,
        thumb_bytes=0,
    )
    return Item(
        offset,
        FRAME_TYPE,
        codec.encode(opened),
        jpeg,
        seal_text=frame.encrypted,
        seal_thumb=frame.thumb_encrypted and jpeg is not None,
    )


def _opened_memory(
    crypto: FrameCrypto | None,
    offset: int,
    event: MemoryKept | MemoryRevised,
    result: ExportResult,
) -> Item:
    """A kept memory's version as an item: its text and value in the clear. A keyed digest
    of its write (``request_hash``, keyed where the text is sealed) cannot be keyed again
    without the write itself, so it stays behind: a retry of that write after the move is
    refused as another write with its key rather than answered as the first."""
    if not event.encrypted:
        return Item(offset, TYPE_CODES[type(event)], bytes(codec.encode(event)))
    number = event.version if isinstance(event, MemoryRevised) else 1
    try:
        sealed = _needed(crypto).decrypt_memory(event.memory_id, number, event.ciphertext)
        text, value = msgspec.msgpack.decode(sealed, type=tuple[str, str])
    except (DecryptionError, msgspec.DecodeError):
        result.unreadable += 1
        text, value = "", ""
    opened = msgspec.structs.replace(
        event,
        text=text,
        value=value,
        ciphertext=b"",
        encrypted=False,
        blind_tokens=(),
        request_hash=b"",
    )
    return Item(offset, TYPE_CODES[type(event)], codec.encode(opened), seal_text=True)


def _needed(crypto: FrameCrypto | None) -> FrameCrypto:
    if crypto is None:
        raise DecryptionError("the encryption key is not available")
    return crypto


# -- import -------------------------------------------------------------------------------


def import_archive(
    home: Path, archive: Path, passphrase: bytes, *, progress: Progress | None = None
) -> ImportResult:
    """Restore ``archive`` into ``home``, a new store (missing, or an empty folder), with a
    key of its own. All or nothing: refused in one line, with nothing written, for a wrong
    passphrase, a damaged archive, an event this version does not read, or a home that
    holds anything; a crash leaves ``home`` as it was."""
    _check_new_home(home)
    try:
        file = archive.open("rb")
    except FileNotFoundError:
        raise NotFoundError(f"no such archive: {archive}") from None
    except OSError as exc:
        raise UsageError(f"cannot read the archive {archive}: {exc.strerror}") from None
    with file:
        reader = Reader(file, passphrase)
        result = ImportResult(home=home)
        last = -1
        for item in reader.items():  # the first pass: everything checked, nothing written
            last = _checked(item, last)
            _count(result, item)
        _sweep_staging(home)
        staging = home.parent / (STAGING.format(name=home.name) + str(os.getpid()))
        try:
            _restore(staging, home, reader.items(), progress)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    try:
        current().rename(staging, home)  # the commit point
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise UsageError(
                f"{home} was filled while the archive was restored; nothing was imported"
            ) from None
        raise
    fsync_dir(home.parent)
    return result


def _check_new_home(home: Path) -> None:
    if home.is_symlink() or (home.exists() and not home.is_dir()):
        raise UsageError(f"{home} is not a folder: an archive is restored into a new store")
    if home.is_dir() and any(home.iterdir()):
        raise UsageError(
            f"{home} already holds a store (or other files): an archive is restored into a new "
            "one, so that every frame keeps its id; choose another --home, or move it away"
        )
    if not home.parent.is_dir():
        raise NotFoundError(f"no such folder: {home.parent}")


def _checked(item: Item, last: int) -> int:
    """The item's offset, once its event decodes under the current types with every
    constraint they declare and fits the archive's order; else one line, nothing written."""
    if item.offset <= last:
        raise CorruptionError(
            f"the archive is damaged: offset {item.offset} comes after {last} (out of order)"
        )
    try:
        event = codec.decode(item.payload)
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            f"the archive holds an event this version does not read (offset {item.offset}: "
            f"{exc}); nothing was imported: import it with a newer Backscroll"
        ) from None
    if codec.type_code(event) != item.type:
        raise CorruptionError(f"the archive is damaged: offset {item.offset} is not of its type")
    if isinstance(event, FrameCaptured) and (event.frame_id != item.offset or event.encrypted):
        raise CorruptionError(f"the archive is damaged: frame {item.offset} is not as written")
    if isinstance(event, MemoryKept | MemoryRevised) and event.encrypted:
        raise CorruptionError(f"the archive is damaged: memory #{item.offset} is not as written")
    return item.offset


def _count(result: ImportResult, item: Item) -> None:
    if item.type in LEFT_BEHIND:
        return
    result.events += 1
    if item.type == FRAME_TYPE:
        result.frames += 1
        result.thumbnails += item.jpeg is not None


def _sweep_staging(home: Path) -> None:
    """Remove what an import killed part way left beside the home: a store that was never
    committed (it may hold screen text)."""
    prefix = STAGING.format(name=home.name)
    for path in home.parent.glob(glob.escape(prefix) + "*"):
        pid = path.name.removeprefix(prefix)
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _restore(staging: Path, home: Path, items: Iterator[Item], progress: Progress | None) -> None:
    """Write the archive's events at their offsets into a new store at ``staging``, sealing
    what the store seals with a key made for ``home``; then catch its views up."""
    from backscroll import keys
    from backscroll.crypto import FrameCrypto
    from backscroll.store import MemoryStore

    private_umask()
    if staging.exists():
        shutil.rmtree(staging)
    ensure_dir(staging)
    store = MemoryStore(staging, write=True, catch_up=False)
    crypto: FrameCrypto | None = None
    written = 0
    pending = _batches(items)
    for batch_items in pending:
        with store.log.batch() as batch:
            for item in batch_items:
                event = codec.decode(item.payload)
                if crypto is None and (item.seal_text or item.seal_thumb):
                    crypto = FrameCrypto(keys.create_key(staging, store_for=home))
                if isinstance(event, FrameCaptured):
                    event = _sealed(event, item, crypto, staging)
                elif isinstance(event, MemoryKept | MemoryRevised) and item.seal_text and crypto:
                    event = _sealed_memory(event, crypto)
                batch.skip_to(item.offset)
                batch.append(event)
        written += len(batch_items)
        if progress:
            progress(written)
    if crypto is not None:
        store.ensure_crypto()  # records the new key (KeyCreated), past the archive's events
    store.refresh()
    if store.state().config:
        store.write_config_file(store.config)
    current().sync()  # the thumbnails, written without fsync


def _batches(items: Iterator[Item]) -> Iterator[list[Item]]:
    batch: list[Item] = []
    for item in items:
        if item.type in LEFT_BEHIND:
            continue
        batch.append(item)
        if len(batch) >= IMPORT_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _sealed(
    frame: FrameCaptured, item: Item, crypto: FrameCrypto | None, home: Path
) -> FrameCaptured:
    """The frame as this store keeps it: its text and thumbnail sealed with its key where the
    old store had sealed them, under the same frame id."""
    from backscroll.record import thumb_path

    frame_id, text = frame.frame_id, frame.text
    seal_text = item.seal_text and crypto is not None
    thumb, thumb_bytes, seal_thumb = None, 0, False
    if item.jpeg is not None:
        seal_thumb = item.seal_thumb and crypto is not None
        data = crypto.encrypt_thumb(frame_id, item.jpeg) if seal_thumb and crypto else item.jpeg
        thumb = thumb_path(frame_id, frame.captured_us, seal_thumb)
        # Not fsynced one by one, as capture does (two fsyncs a thumbnail were 80% of an
        # import's time): nothing refers to the staged store until its rename, before which
        # ``_restore`` makes every file durable at once.
        ensure_dir((home / thumb).parent)
        file = current().create(home / thumb)
        try:
            file.write(data)
        finally:
            file.close()
        thumb_bytes = len(data)
    return msgspec.structs.replace(
        frame,
        text="" if seal_text else text,
        ciphertext=crypto.encrypt_text(frame_id, text) if seal_text and crypto else b"",
        encrypted=seal_text,
        blind_tokens=crypto.blind_tokens(text) if seal_text and crypto else (),
        thumb=thumb,
        thumb_encrypted=seal_thumb,
        thumb_bytes=thumb_bytes,
    )


def _sealed_memory(
    event: MemoryKept | MemoryRevised, crypto: FrameCrypto
) -> MemoryKept | MemoryRevised:
    """A kept memory's version sealed with this store's key, as ``backscroll.keep`` seals it:
    the text and value together, bound to its id and version, with their blind tokens."""
    number = event.version if isinstance(event, MemoryRevised) else 1
    pair = msgspec.msgpack.encode((event.text, event.value))
    return msgspec.structs.replace(
        event,
        text="",
        value="",
        ciphertext=crypto.encrypt_memory(event.memory_id, number, pair),
        encrypted=True,
        blind_tokens=crypto.blind_tokens(f"{event.text} {event.value}"),
    )
