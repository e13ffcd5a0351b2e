"""The archive (``export --archive``, ``import --archive``): a store moved to a new home whole,
under a key of its own, or not at all."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from backscroll import archive_format, keys
from backscroll.archive import export_archive, import_archive, read_passphrase
from backscroll.archive_format import CHUNK, HEADER, Item, Kdf, Writer, open_archive
from backscroll.importer import import_frames
from backscroll.manage import deny, pause, resume
from backscroll.store import MemoryStore
from base.clock import now_us
from base.errors import BackscrollError, CorruptionError, UsageError
from eventlog import codec
from eventlog.events import (
    TYPE_CODES,
    DaemonStarted,
    DaemonStopped,
    FrameCaptured,
    FramesDeleted,
    KeyCreated,
    ReindexRequested,
)
from tests.helpers import ago, run
from tests.residue import files_containing

PASSPHRASE = b"correct horse battery"
CHEAP = Kdf(memory_kib=1024, iterations=1, lanes=1)
"""A KDF that costs nothing, for the tests that are not about its cost."""
QUERIES = ["econnrefused", "invoice", "world", '"connection refused"', "quarterly"]


def _line(minutes: float, app: str, title: str, text: str, image: Path) -> str:
    return json.dumps(
        {"ts": ago(minutes), "app": app, "title": title, "text": text, "image": str(image)}
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with plaintext frames, then encrypted ones, a deny pattern, a pause and a
    resume, a deletion: every frame with a thumbnail (sealed, the default). Made once."""
    from PIL import Image

    from backscroll.manage import delete

    root = tmp_path_factory.mktemp("template")
    png, home = root / "screen.png", root / "home"
    Image.new("RGB", (96, 60), (30, 120, 200)).save(png)
    with MemoryStore(home, write=True) as store:
        import_frames(
            store,
            [
                _line(90 - i, "Terminal", f"zsh {i}", f"hello world {i} connection refused", png)
                for i in range(12)
            ],
        )
        store.set_config(encrypt_text=True)
        import_frames(
            store,
            [
                _line(60 - i, "Firefox", f"Invoice {i}", f"invoice {i} quarterly econnrefused", png)
                for i in range(12)
            ],
        )
        import_frames(store, [_line(30, "Slack", "secret chat", "zanzibar plans", png)])
        deny(store, "bank", None)
        pause(store, None)
        resume(store)
        delete(store, start=None, end=None, app="slack")
    return home


@pytest.fixture
def old(template: Path, backscroll_home: Path) -> Path:
    """The template store, copied to the test's home."""
    shutil.copytree(template, backscroll_home, symlinks=True)
    return backscroll_home


def exported(home: Path, path: Path, passphrase: bytes = PASSPHRASE) -> Path:
    with MemoryStore(home) as store:
        export_archive(store, path, passphrase, kdf=CHEAP)
    return path


def listing(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes, every folder as b"/"."""
    if not root.exists():
        return {}
    out = {}
    for path in sorted(root.rglob("*")):
        out[str(path.relative_to(root))] = b"/" if path.is_dir() else path.read_bytes()
    return out


def answers(home: Path) -> dict[str, Any]:
    """What a person sees of a store: every search, the timeline, every frame's text and
    thumbnail, the config."""
    with MemoryStore(home) as store:
        seen: dict[str, Any] = {
            q: [(h.id, h.app, h.title, h.snippet) for h in store.search(q, limit=100)]
            for q in QUERIES
        }
        timeline = store.timeline(limit=1000)
        seen["timeline"] = [(h.id, h.when, h.app, h.title, h.url) for h in timeline]
        seen["frames"] = {
            h.id: (store.get(h.id).text, store.get(h.id).encrypted, store.thumbnail(h.id))
            for h in timeline
        }
        seen["config"] = store.config
        seen["paused"] = store.state().pause.paused
        seen["deletions"] = [(d.scope, d.completed_us is not None) for d in store.state().deletions]
    return seen


def test_a_store_moves_whole_under_a_key_of_its_own(old: Path, tmp_path: Path) -> None:
    archive = exported(old, tmp_path / "memory.bsa")
    assert archive.stat().st_mode & 0o777 == 0o600
    new = tmp_path / "new"
    result = import_archive(new, archive, PASSPHRASE)
    assert (result.frames, result.thumbnails) == (24, 24)
    before, after = answers(old), answers(new)
    assert after == before
    assert all(after[q] for q in QUERIES)
    assert {text[1] for text in after["frames"].values()} == {True, False}  # both kinds moved
    assert after["config"].deny_apps[-1] == "bank"
    assert keys.load_key(new, create=False) != keys.load_key(old, create=False)
    with MemoryStore(new) as store:
        assert store.lag == 0
        assert store.state().key_fingerprint == keys.fingerprint(
            keys.load_key(new, create=False) or b""
        )
    code, out, _ = run_cli("verify", "--home", str(new))
    assert code == 0, out


def run_cli(*args: str) -> tuple[int, str, str]:
    """``backscroll *args`` in a child process: its exit code, stdout and stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", *args], capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout, done.stderr


def test_every_event_travels_at_its_offset_but_the_old_keys_and_hidden_frames(
    old: Path, tmp_path: Path
) -> None:
    with MemoryStore(old, write=True) as store:
        store.append(DaemonStarted(ts_us=now_us(), pid=4242, version="0"))
        store.append(DaemonStopped(ts_us=now_us(), pid=4242))
        store.append(ReindexRequested(ts_us=now_us(), views_only=True))
    new = tmp_path / "new"
    import_archive(new, exported(old, tmp_path / "a.bsa"), PASSPHRASE)

    def events(home: Path) -> list[tuple[int, str]]:
        with MemoryStore(home) as store:
            return [
                (offset, type(event).__name__)
                for offset, event in store.log.read()
                if not isinstance(event, KeyCreated)
            ]

    assert events(new) == events(old)
    kinds = {kind for _, kind in events(old)}
    assert {"DaemonStarted", "DaemonStopped", "ReindexRequested", "FramesDeleted"} <= kinds
    assert {"CapturePaused", "CaptureResumed", "PurgeCompleted", "ConfigChanged"} <= kinds
    with MemoryStore(new) as store:
        keys_made = [e for _, e in store.log.read() if isinstance(e, KeyCreated)]
    assert len(keys_made) == 1  # the new store's own, after the archive's events


def test_deleted_frames_leave_nothing_in_the_archive(old: Path, tmp_path: Path) -> None:
    # A deletion whose purge has not run yet: its tombstone hides the frames, which the log
    # still holds.
    with MemoryStore(old, write=True) as store:
        import_frames(
            store, [json.dumps({"ts": ago(5), "app": "Mail", "title": "x", "text": "ultramarine"})]
        )
        upto = store.log.next_offset() - 1
        store.log.append(FramesDeleted(ts_us=now_us(), upto_id=upto, app="Mail"))
    archive = tmp_path / "a.bsa"
    with MemoryStore(old) as store:
        result = export_archive(store, archive, PASSPHRASE, kdf=CHEAP)
    assert result.left_out == 1
    with archive.open("rb") as file:
        payloads = [item.payload + (item.jpeg or b"") for item in open_archive(file, PASSPHRASE)]
    for word in (b"zanzibar", b"ultramarine"):
        assert not any(word in p for p in payloads)
    new = tmp_path / "new"
    import_archive(new, archive, PASSPHRASE)
    assert files_containing(new, "zanzibar") == files_containing(new, "ultramarine") == []
    with MemoryStore(new) as store:
        assert store.search("ultramarine") == []


@pytest.fixture
def archive(old: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An archive of several chunks (small ones)."""
    monkeypatch.setattr(archive_format, "CHUNK_BYTES", 2_000)
    return exported(old, tmp_path / "a.bsa")


def chunks(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each chunk of an archive's bytes."""
    spans, at = [], HEADER.size
    while at < len(data):
        (length,) = CHUNK.unpack_from(data, at)
        spans.append((at, at + CHUNK.size + length))
        at += CHUNK.size + length
    return spans


def refused(archive: Path, home: Path, passphrase: bytes = PASSPHRASE) -> str:
    """The one line an import of ``archive`` is refused with; ``home`` left as it was."""
    before = listing(home)
    with pytest.raises(BackscrollError) as caught:
        import_archive(home, archive, passphrase)
    assert listing(home) == before
    assert not list(home.parent.glob(f".{home.name}.import-*"))
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_wrong_passphrase_is_one_line_and_changes_nothing(archive: Path, tmp_path: Path) -> None:
    message = refused(archive, tmp_path / "new", b"correct horse battery!")
    assert message == "wrong passphrase: the archive does not open with it"


@pytest.mark.parametrize("where", ["header", "first chunk", "chunk body", "final chunk", "tag"])
def test_a_flipped_byte_is_found_and_changes_nothing(
    archive: Path, tmp_path: Path, where: str
) -> None:
    data = bytearray(archive.read_bytes())
    spans = chunks(bytes(data))
    assert len(spans) >= 3
    at = {
        "header": 20,
        "first chunk": spans[0][0] + CHUNK.size + 3,
        "chunk body": (spans[1][0] + spans[1][1]) // 2,
        "final chunk": spans[-1][0] + CHUNK.size + 1,
        "tag": len(data) - 1,
    }[where]
    data[at] ^= 0x01
    archive.write_bytes(bytes(data))
    assert "the archive is damaged" in refused(archive, tmp_path / "new")


@pytest.mark.parametrize(
    "cut", ["in the header", "at a chunk's end", "in a chunk", "the final chunk"]
)
def test_an_archive_cut_short_is_found_and_changes_nothing(
    archive: Path, tmp_path: Path, cut: str
) -> None:
    data = archive.read_bytes()
    spans = chunks(data)
    end = {
        "in the header": 30,
        "at a chunk's end": spans[1][1],
        "in a chunk": spans[1][1] - 5,
        "the final chunk": spans[-1][0],
    }[cut]
    archive.write_bytes(data[:end])
    message = refused(archive, tmp_path / "new")
    assert "damaged" in message or "not a Backscroll archive" in message


def test_chunks_swapped_or_repeated_are_found(archive: Path, tmp_path: Path) -> None:
    data = archive.read_bytes()
    (a0, a1), (b0, b1) = chunks(data)[:2]
    archive.write_bytes(data[:a0] + data[b0:b1] + data[a0:a1] + data[b1:])
    assert "chunk 0 does not open" in refused(archive, tmp_path / "new")
    archive.write_bytes(data[:b1] + data[a0:a1] + data[b1:])
    assert "damaged" in refused(archive, tmp_path / "new")
    archive.write_bytes(data + data[a0:a1])
    assert "bytes follow its final chunk" in refused(archive, tmp_path / "new")


def test_a_home_that_holds_anything_is_refused(archive: Path, tmp_path: Path) -> None:
    home = tmp_path / "new"
    home.mkdir()
    (home / "notes.txt").write_text("mine")
    assert "already holds a store" in refused(archive, home)
    (home / "notes.txt").unlink()
    import_archive(home, archive, PASSPHRASE)  # an empty folder is a new home
    assert "already holds a store" in refused(archive, home)  # and a second import is refused


def _archive_of(path: Path, items: list[Item]) -> Path:
    with path.open("wb") as file:
        writer = Writer(file, PASSPHRASE, CHEAP)
        for item in items:
            writer.add(item)
        writer.close()
    return path


def test_every_event_is_checked_against_its_constraints_before_anything_is_written(
    tmp_path: Path,
) -> None:
    good = FrameCaptured(ts_us=1, frame_id=0, captured_us=1, app="a", title="t")
    frame = TYPE_CODES[FrameCaptured]
    too_long = msgspec.msgpack.encode(
        {**msgspec.to_builtins(good), "k": "frame", "app": "x" * 5000, "frame_id": 1}
    )
    unknown = msgspec.msgpack.encode({"k": "memory_kept", "ts_us": 1, "text": "hi"})
    started = TYPE_CODES[DaemonStarted]

    def run_of(pid: int) -> bytes:
        return codec.encode(DaemonStarted(ts_us=1, pid=pid))

    cases = {
        "does not read": [Item(0, frame, codec.encode(good)), Item(1, frame, too_long)],
        "newer Backscroll": [Item(0, 99, unknown)],
        "out of order": [Item(3, started, run_of(3)), Item(2, started, run_of(2))],
        "not of its type": [Item(0, TYPE_CODES[KeyCreated], codec.encode(good))],
        "not as written": [Item(5, frame, codec.encode(good))],
    }
    for said, items in cases.items():
        archive = _archive_of(tmp_path / f"{said}.bsa", items)
        assert said in refused(archive, tmp_path / "new"), said


@pytest.mark.slow
def test_an_import_killed_part_way_leaves_the_home_as_it_was(
    archive: Path, tmp_path: Path, old: Path
) -> None:
    new = tmp_path / "new"
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "import backscroll.archive as a\n"
        "import base.fs\n"
        "where = sys.argv[3]\n"
        "def die(*_):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "if where == 'batch':\n"
        "    a.IMPORT_BATCH = 5\n"
        "    progress = lambda n: n >= 10 and die()\n"
        "else:\n"
        "    progress = None\n"
        "    base.fs.FS.rename = die\n"
        "a.import_archive(Path(sys.argv[1]), Path(sys.argv[2]), b'correct horse battery',\n"
        "                 progress=progress)\n"
    )
    for where in ("batch", "commit"):
        done = subprocess.run(
            [sys.executable, "-c", script, str(new), str(archive), where], check=False
        )
        assert done.returncode == -signal.SIGKILL
        assert not new.exists()
        assert list(tmp_path.glob(".new.import-*"))  # what it had staged, never committed
    import_archive(new, archive, PASSPHRASE)  # the next import sweeps it away
    assert not list(tmp_path.glob(".new.import-*"))
    assert answers(new) == answers(old)


def test_the_passphrase_file_must_be_the_owners_alone_and_not_empty(tmp_path: Path) -> None:
    pf = tmp_path / "pf"
    with pytest.raises(BackscrollError, match="no such passphrase file"):
        read_passphrase(pf)
    pf.write_bytes(b"\n")
    pf.chmod(0o600)
    with pytest.raises(UsageError, match="is empty"):
        read_passphrase(pf)
    pf.write_bytes(b"correct horse battery\n")
    pf.chmod(0o640)
    with pytest.raises(UsageError, match=r"read or written by others \(mode 0640\)"):
        read_passphrase(pf)
    pf.chmod(0o400)
    assert read_passphrase(pf) == PASSPHRASE
    pf.chmod(0o600)
    pf.write_bytes(b"short\r\n")
    assert read_passphrase(pf) == b"short"
    with pytest.raises(UsageError, match="shorter than 8 characters"):
        read_passphrase(pf, new=True)


def test_export_never_replaces_a_file(old: Path, tmp_path: Path) -> None:
    target = tmp_path / "a.bsa"
    target.write_bytes(b"mine")
    with MemoryStore(old) as store, pytest.raises(UsageError, match="exists"):
        export_archive(store, target, PASSPHRASE, kdf=CHEAP)
    assert target.read_bytes() == b"mine"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".a.bsa")] == []


def test_the_cli_moves_a_store_and_refuses_in_one_line(
    old: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pf = tmp_path / "pf"
    pf.write_bytes(PASSPHRASE + b"\n")
    pf.chmod(0o600)
    archive, new = tmp_path / "a.bsa", tmp_path / "new"
    refusals = [
        (("export", "--archive", str(archive)), "--archive needs --passphrase-file"),
        (("export", "--passphrase-file", str(pf)), "--passphrase-file goes with --archive"),
        (
            ("export", "--archive", str(archive), "--passphrase-file", str(pf), "--app", "x"),
            "it takes no --app",
        ),
        (("import", "--archive", str(archive)), "--archive needs --passphrase-file"),
        (
            ("import", "f.jsonl", "--archive", str(archive), "--passphrase-file", str(pf)),
            "not both",
        ),
        (
            ("import", "--skip-bad", "--archive", str(archive), "--passphrase-file", str(pf)),
            "--skip-bad is for JSON Lines",
        ),
        (("import",), "import needs FILE"),
        (
            ("import", "--archive", str(archive), "--passphrase-file", str(pf), "--home", str(new)),
            "no such archive",
        ),
        (("export", "--archive", "", "--passphrase-file", str(pf)), "archive: must not be empty"),
    ]
    for args, said in refusals:
        code, out, err = run(capsys, *args)
        assert code != 0 and said in err and len(err.strip().splitlines()) == 1, (args, err)
    code, out, err = run(capsys, "export", "--archive", str(archive), "--passphrase-file", str(pf))
    assert code == 0, err
    assert "24 frame(s) and 24 thumbnail(s)" in out
    header = archive.read_bytes()[: HEADER.size]
    assert HEADER.unpack(header)[3:6] == (64 * 1024, 3, 4)  # RFC 9106's second setting
    code, out, err = run(
        capsys,
        "import",
        "--archive",
        str(archive),
        "--passphrase-file",
        str(pf),
        "--home",
        str(new),
    )
    assert code == 0, err
    assert f"into {new}" in out
    assert answers(new) == answers(old)
    code, _, err = run(
        capsys,
        "import",
        "--archive",
        str(archive),
        "--passphrase-file",
        str(pf),
        "--home",
        str(new),
    )
    assert code == 1 and "already holds a store" in err


def test_the_archive_streams_with_a_reader_holding_one_chunk(tmp_path: Path) -> None:
    items = [Item(i, 1, os.urandom(300)) for i in range(2_000)]
    buffer = io.BytesIO()
    writer = Writer(buffer, PASSPHRASE, CHEAP)
    for item in items:
        writer.add(item)
    writer.close()
    assert len(chunks(buffer.getvalue())) == 1  # 600 KB: under one chunk
    buffer.seek(0)
    assert list(open_archive(buffer, PASSPHRASE)) == items
    buffer.seek(0)
    with pytest.raises(UsageError):
        open_archive(buffer, b"wrong")
    buffer.seek(0)
    buffer.write(b"NOTANARC")
    buffer.seek(0)
    with pytest.raises(CorruptionError, match="not a Backscroll archive"):
        open_archive(buffer, PASSPHRASE)


def test_a_deletion_while_the_archive_is_written_leaves_no_archive(
    old: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import backscroll.archive

    monkeypatch.setattr(backscroll.archive, "IMPORT_BATCH", 5)
    target = tmp_path / "a.bsa"

    def delete_now(_: int) -> None:
        with MemoryStore(old, write=True) as store:
            store.log.append(FramesDeleted(ts_us=now_us(), upto_id=3))

    with MemoryStore(old) as store, pytest.raises(UsageError, match="export again"):
        export_archive(store, target, PASSPHRASE, kdf=CHEAP, progress=delete_now)
    assert list(tmp_path.glob("*a.bsa*")) == []


@pytest.mark.slow
def test_a_power_cut_at_any_write_of_an_import_leaves_the_home_as_it_was_or_whole(
    archive: Path, tmp_path: Path, old: Path
) -> None:
    from tests.faultfs import FaultFS, PowerCut, installed

    expected = answers(old)
    new = tmp_path / "new"
    with installed(FaultFS()) as counting:
        import_archive(new, archive, PASSPHRASE)
        # Once it returns, every byte it wrote is durable (the model cannot follow a folder
        # renamed, so this is checked file by file, and the rename by the power cut).
        assert all(counting.synced.get(i) == bytes(b) for i, b in counting.content.items())
        counting.power_cut()
    assert answers(new) == expected
    calls = counting.calls
    shutil.rmtree(new)
    # Every write of the last batch, the views and the commit; a sample of the rest.
    points = sorted({*range(1, calls, max(1, calls // 12)), *range(max(1, calls - 40), calls + 1)})
    for crash_at in points:
        with installed(FaultFS(crash_at=crash_at)) as fs:
            with pytest.raises(PowerCut):
                import_archive(new, archive, PASSPHRASE)
            fs.power_cut()
        if new.exists():
            assert answers(new) == expected, crash_at
            shutil.rmtree(new)
        for staged in tmp_path.glob(".new.import-*"):
            shutil.rmtree(staged)


def test_a_home_filled_while_the_archive_is_restored_is_left_to_what_filled_it(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import backscroll.archive

    new = tmp_path / "new"
    restore = backscroll.archive._restore

    def and_a_daemon_starts(*args: Any) -> None:
        restore(*args)
        new.mkdir()
        (new / "daemon.json").write_text("{}")

    monkeypatch.setattr(backscroll.archive, "_restore", and_a_daemon_starts)
    with pytest.raises(UsageError, match="was filled while the archive was restored"):
        import_archive(new, archive, PASSPHRASE)
    assert listing(new) == {"daemon.json": b"{}"}
    assert not list(tmp_path.glob(".new.import-*"))


class _SealedNote(msgspec.Struct, tag="sealed_note"):
    ciphertext: bytes


def test_an_event_sealed_with_the_stores_key_that_the_archive_cannot_open_stops_it(
    old: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No event but a frame holds ciphertext today: one that would (a kept memory sealed with
    # the store's key) is staged by reading the config's events as such.
    import backscroll.archive
    from eventlog.events import ConfigChanged

    decode = codec.decode

    def as_sealed(payload: bytes) -> Any:
        event = decode(payload)
        return _SealedNote(ciphertext=b"\x01") if isinstance(event, ConfigChanged) else event

    monkeypatch.setattr(backscroll.archive.codec, "decode", as_sealed)
    target = tmp_path / "a.bsa"
    with MemoryStore(old) as store, pytest.raises(UsageError, match="cannot carry sealed_note"):
        export_archive(store, target, PASSPHRASE, kdf=CHEAP)
    assert list(tmp_path.glob("*a.bsa*")) == []


def _kept(home: Path) -> dict[str, Any]:
    """What an agent reads of the kept memories: the list, each one's history, a claim."""
    from backscroll.contract import parse
    from backscroll.contract.keep import HistoryRequest, ListRequest, ResolveRequest
    from backscroll.keep import Keeper

    with MemoryStore(home) as store:
        keeper = Keeper(store)
        listed = keeper.memories(parse(ListRequest, {})).memories
        return {
            "memories": [msgspec.to_builtins(m) for m in listed],
            "history": {
                m.id: msgspec.to_builtins(keeper.history(parse(HistoryRequest, {"id": m.id})))
                for m in listed
            },
            "claim": msgspec.to_builtins(
                keeper.resolve(
                    parse(ResolveRequest, {"subject": "staging", "predicate": "resets_on"})
                )
            ),
        }


def test_kept_memories_move_with_their_history_sealed_again_and_forgotten_ones_stay(
    old: Path, tmp_path: Path
) -> None:
    from backscroll.contract import parse
    from backscroll.contract.keep import ForgetRequest, KeepRequest, ReviseRequest
    from backscroll.keep import Keeper
    from eventlog.events import MemoryForgotten, MemoryKept

    with MemoryStore(old, write=True) as store:  # encrypt_text is on: memories are sealed
        keeper = Keeper(store)
        fact = keeper.keep(
            parse(
                KeepRequest,
                {
                    "text": "The staging database resets on Sundays.",
                    "subject": "staging",
                    "predicate": "resets_on",
                    "value": "sunday",
                },
            )
        ).memory
        keeper.revise(
            parse(
                ReviseRequest,
                {"id": fact.id, "expected_version": 1, "text": "Staging resets on Sundays at 3."},
            )
        )
        gone = keeper.keep(parse(KeepRequest, {"text": "Forget me: the word is periwinkle."}))
        keeper.forget(parse(ForgetRequest, {"id": gone.memory.id}))
        pending = keeper.keep(parse(KeepRequest, {"text": "Not erased yet: vermilion."}))
        # A forget whose erasure has not run yet (a crash after its tombstone).
        store.log.append(MemoryForgotten(ts_us=now_us(), memory_id=pending.memory.id, version=1))
        assert all(e.encrypted for _, e in store.log.read() if isinstance(e, MemoryKept))
    archive = exported(old, tmp_path / "a.bsa")
    with archive.open("rb") as file:
        payloads = [item.payload for item in open_archive(file, PASSPHRASE)]
    assert any(b"Staging resets on Sundays at 3." in p for p in payloads)
    assert not any(b"periwinkle" in p or b"vermilion" in p for p in payloads)
    new = tmp_path / "new"
    import_archive(new, archive, PASSPHRASE)
    assert _kept(new) == _kept(old)
    assert _kept(new)["claim"]["found"]
    assert files_containing(new, "periwinkle") == files_containing(new, "vermilion") == []
    assert files_containing(new, "Sundays") == []  # sealed again, under the new key
