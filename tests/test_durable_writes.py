"""Every durable write of a store, under the file layer's guarantees and under power cuts.

First the layer itself (``base/fs.py``): whole writes, unique temporary names, a full disk,
folders made without the umask. Then, as ``test_eventlog_crash.py`` does for the log, a
simulated power cut (``tests/faultfs.py``, installed as the layer of every write) at each
write call of each durable write of a store: a captured frame (its thumbnail, then its
event), the views catching up (a commit, then its manifest), a rebuild of the views, the key's
creation, a config edit (by command and by hand), a purge (its plan, the compaction, the
thumbnails) and the service unit's rewrite. After each cut the store is reopened as the next
process would open it and must be consistent: ``verify`` clean, every acknowledged write
there, no event naming a missing or short thumbnail, the key absent or whole and never
replaced, the unit old or new.

Every random choice is seeded; the call number and the call are in each failure message.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import os
import random
import re
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import msgspec
import pytest

import base.fs
from backscroll import keys
from backscroll.manage import delete, rebuild_views
from backscroll.record import record_frame, remove_orphan_thumbnails, write_thumbnail
from backscroll.service import install
from backscroll.store import CONFIG_FILE, MemoryStore
from backscroll.verify import verify_store
from base.clock import now_us
from base.errors import DiskFullError
from base.fs import FileSystem, WritableFile, ensure_dir, write_atomic, write_file, write_new
from capture.seen import Seen
from eventlog.events import FRAME_TYPE, DaemonStarted, FrameCaptured, FramesDeleted, KeyCreated
from tests.faultfs import FaultFS, PowerCut, installed
from tests.helpers import besides_torn_tails

DAY = timedelta(days=1)
START = datetime(2026, 3, 30, 12, 0)


def seen(i: int, app: str = "editor", day: int = 0) -> Seen:
    return Seen(
        captured_us=int((START + day * DAY).timestamp() * 1_000_000) + i,
        app=app,
        title=f"notes {i}",
        text=f"frame{i} words on the screen",
        text_source="ocr",
        reason="interval",
        jpeg=jpeg(i),
    )


def jpeg(i: int) -> bytes:
    # Long enough that a torn write leaves a visibly short file.
    return b"\xff\xd8" + random.Random(i).randbytes(3000)


def number_of(frame: FrameCaptured) -> int:
    return int(frame.text.split()[0].removeprefix("frame"))


def capture(store: MemoryStore, *frames: Seen) -> list[int]:
    """Record ``frames`` one batch each, as the daemon does; the ids acknowledged."""
    crypto = store.ensure_crypto()
    ids = []
    for one in frames:
        with store.log.batch() as batch:
            ids.append(record_frame(batch, one, store.config, crypto, store.home).frame_id)
    return ids


# -- the layer -------------------------------------------------------------------------------


def test_a_short_write_is_continued_until_every_byte_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data)[:7]))
    data = bytes(range(256)) * 40
    write_atomic(tmp_path / "atomic", data)
    write_new(tmp_path / "new", data)
    write_file(tmp_path / "in-place", data)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == dict.fromkeys(
        ("atomic", "new", "in-place"), data
    )


class Spy(FileSystem):
    """The real layer, noting every file it creates."""

    def __init__(self) -> None:
        self.created: list[tuple[str, bool]] = []

    def create(self, path: Path, *, exclusive: bool = False, mode: int = 0o600) -> WritableFile:
        self.created.append((path.name, exclusive))
        return super().create(path, exclusive=exclusive, mode=mode)


def test_temporary_names_are_unique_and_exclusive_so_two_writers_never_share_one(
    tmp_path: Path,
) -> None:
    (tmp_path / ".state.tmp").write_bytes(b"a fixed name another writer was using")
    spy = Spy()
    with installed(spy):
        write_atomic(tmp_path / "state", b"one")
        write_atomic(tmp_path / "state", b"two")
    (first, first_exclusive), (second, second_exclusive) = spy.created
    assert first != second and first_exclusive and second_exclusive
    assert first.startswith(".state.") and first.endswith(".tmp")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".state.tmp", "state"]
    assert (tmp_path / ".state.tmp").read_bytes().startswith(b"a fixed name")


class FullDisk(FileSystem):
    """Files take ``room`` bytes, then fail as a full disk does."""

    def __init__(self, room: int) -> None:
        self.room = room

    def create(self, path: Path, *, exclusive: bool = False, mode: int = 0o600) -> WritableFile:
        f = super().create(path, exclusive=exclusive, mode=mode)
        room = self.room

        def write(data: bytes | memoryview) -> None:
            WritableFile.write(f, bytes(data)[:room])
            raise OSError(errno.ENOSPC, "No space left on device")

        f.write = write  # type: ignore[method-assign]
        return f


@pytest.mark.parametrize("room", [0, 10])
def test_a_full_disk_is_reported_and_leaves_the_old_file_and_no_partial_one(
    tmp_path: Path, room: int
) -> None:
    write_atomic(tmp_path / "config.json", b"the old config")
    with installed(FullDisk(room)):
        with pytest.raises(DiskFullError, match="the disk is full"):
            write_atomic(tmp_path / "config.json", b"the new config, longer than the room")
        with pytest.raises(DiskFullError):
            write_new(tmp_path / "key", b"a key that does not fit")
        with pytest.raises(DiskFullError):
            write_file(tmp_path / "7.jpg", b"a thumbnail that does not fit")
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]
    assert (tmp_path / "config.json").read_bytes() == b"the old config"


def test_an_existing_file_is_never_replaced_by_write_new(tmp_path: Path) -> None:
    assert write_new(tmp_path / "key", b"first")
    assert not write_new(tmp_path / "key", b"second")
    assert [p.name for p in tmp_path.iterdir()] == ["key"]
    assert (tmp_path / "key").read_bytes() == b"first"


def test_files_and_folders_are_private_without_touching_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        folder = ensure_dir(tmp_path / "a" / "b" / "c")
        write_atomic(folder / "state", b"x")
        write_file(folder / "thumb", b"x")
        write_new(folder / "key", b"x")
        write_atomic(folder / "unit", b"x", mode=0o644)
        assert os.umask(0o022) == 0o022
    finally:
        os.umask(previous)
    for path in (tmp_path / "a", tmp_path / "a" / "b", folder):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}
    assert modes == {"state": 0o600, "thumb": 0o600, "key": 0o600, "unit": 0o644}


def test_a_folder_is_durable_once_ensure_dir_returns(tmp_path: Path) -> None:
    fs = FaultFS()
    with installed(fs):
        ensure_dir(tmp_path / "thumbs" / "2026-03-30")
        write_file(tmp_path / "thumbs" / "2026-03-30" / "1.jpg", b"whole")
        fs.mkdir(tmp_path / "unsynced")  # a folder whose entry nothing made durable
    fs.power_cut()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thumbs"]
    assert (tmp_path / "thumbs" / "2026-03-30" / "1.jpg").read_bytes() == b"whole"


def test_the_fault_fs_undoes_links_and_folders_not_made_durable(tmp_path: Path) -> None:
    fs = FaultFS()
    f = fs.create(tmp_path / "tmp", exclusive=True)
    f.write(b"secret")
    f.fsync()
    f.close()
    fs.link(tmp_path / "tmp", tmp_path / "key")
    fs.mkdir(tmp_path / "day")
    g = fs.create(tmp_path / "day" / "1.jpg")
    g.write(b"picture")
    g.fsync()
    g.close()
    fs.fsync_dir(tmp_path / "day")  # the file's entry is durable, the folder's is not

    fs.power_cut()

    assert list(tmp_path.iterdir()) == []
    with pytest.raises(PowerCut):
        fs.mkdir(tmp_path / "after")


def test_an_orphan_thumbnail_is_removed_even_once_its_number_went_to_another_event(
    keyed: Path,
) -> None:
    with MemoryStore(keyed, write=True) as store:
        kept = capture(store, seen(0))
        crypto = store.ensure_crypto()
        assert crypto is not None
        orphan = store.home / write_thumbnail(
            store.home, store.log.next_offset(), seen(1).captured_us, jpeg(1), True
        )  # a crash here, before the frame's event
        store.append(DaemonStarted(ts_us=now_us(), pid=os.getpid()))  # takes its number
        with store.log.locked():
            assert remove_orphan_thumbnails(store.home, store.log) == 1
        assert not orphan.exists()
        assert store.thumbnail(kept[0]) == jpeg(0)
        assert verify_store(store) == []


# -- a power cut at every write call of each durable write ---------------------------------


@dataclass
class Told:
    """What the interrupted operation acknowledged before the power went."""

    frames: list[int] = field(default_factory=list)
    done: bool = False


Act = Callable[[Path, Told], None]


def traced(tmp_path: Path, template: Path, act: Act) -> list[str]:
    """The write calls ``act`` makes on a copy of ``template``, in order."""
    shutil.copytree(template, tmp_path / "trace")
    with installed(FaultFS()) as fs:
        act(tmp_path / "trace", Told())
    shutil.rmtree(tmp_path / "trace")
    return fs.trace


def power_cuts(
    tmp_path: Path, template: Path, act: Act, trace: list[str], torn: bool
) -> Iterator[tuple[Path, Told, str]]:
    """Run ``act`` on a copy of ``template`` once per call of its ``trace``, cut at that call."""
    for n in range(1, len(trace) + 1):
        home = tmp_path / f"cut{n}"
        shutil.copytree(template, home)
        cut, told = FaultFS(crash_at=n), Told()
        with installed(cut), pytest.raises(PowerCut):
            act(home, told)
        cut.power_cut(random.Random(n) if torn else None)
        yield home, told, f"power cut at call {n} of {len(trace)} ({cut.trace[-1]})"
        shutil.rmtree(home)


@contextlib.contextmanager
def reopened(home: Path, where: str) -> Iterator[MemoryStore]:
    """The store as the capture daemon finds it when it starts, after its start-up repairs:
    its first append (the log's torn tail kept aside), then the thumbnails of frames whose
    event never made it removed; the views caught up."""
    # Under a fault layer that never cuts, for its fsyncs in the model only: sweeps run fast.
    with installed(FaultFS()), MemoryStore(home, write=True) as store:
        store.append(DaemonStarted(ts_us=now_us(), pid=os.getpid()))
        with store.log.locked():
            remove_orphan_thumbnails(home, store.log)
        assert store.lag == 0, f"{where}: the views did not catch up ({store.behind_why})"
        assert besides_torn_tails(verify_store(store)) == [], where
        yield store


def check_thumbnails(store: MemoryStore, where: str) -> dict[int, FrameCaptured]:
    """Every frame in the log, each with its thumbnail whole."""
    frames = {}
    for _, event in store.log.read(types={FRAME_TYPE}):
        assert isinstance(event, FrameCaptured)
        frames[event.frame_id] = event
        assert store.thumbnail(event.frame_id) == jpeg(number_of(event)), (
            f"{where}: frame #{event.frame_id} names a short or missing thumbnail"
        )
    return frames


@pytest.fixture
def keyed(tmp_path: Path) -> Path:
    """A store with its key and nothing captured yet."""
    home = tmp_path / "keyed"
    with MemoryStore(home, write=True) as store:
        store.ensure_crypto()
    return home


@pytest.fixture
def captured(keyed: Path, tmp_path: Path) -> Path:
    """A store holding five frames over two days and two apps, views caught up."""
    home = tmp_path / "captured"
    shutil.copytree(keyed, home)
    with MemoryStore(home, write=True) as store:
        capture(store, seen(0), seen(1, "secret"), seen(2, day=1), seen(3, "secret", day=1))
        capture(store, seen(4))
        store.refresh()
    return home


def capture_and_search(home: Path, told: Told) -> None:
    with MemoryStore(home, write=True) as store:
        for one in (seen(10), seen(11), seen(12, day=2)):
            told.frames += capture(store, one)
        store.refresh()
        told.done = True


@pytest.mark.parametrize("torn", [False, True], ids=["unsynced-dropped", "unsynced-partly-kept"])
@pytest.mark.slow
def test_a_power_cut_while_capturing_loses_no_acknowledged_frame_or_thumbnail(
    tmp_path: Path, keyed: Path, torn: bool
) -> None:
    trace = traced(tmp_path, keyed, capture_and_search)
    assert any(call.startswith("mkdir thumbs") for call in trace)  # the first thumbnail
    assert any(call.endswith(".jpg.enc") and call.startswith("create") for call in trace)
    assert any(call.startswith("append ") for call in trace), "the log is not under the cut"
    assert any(call.startswith("rename manifest.json") for call in trace)
    for home, told, where in power_cuts(tmp_path, keyed, capture_and_search, trace, torn):
        with reopened(home, where) as store:
            frames = check_thumbnails(store, where)
            assert set(told.frames) <= set(frames), f"{where}: an acknowledged frame is gone"
            for frame_id in frames:
                assert store.get(frame_id).app == "editor", where


def catch_up(home: Path, told: Told) -> None:
    with MemoryStore(home, write=True) as store:
        told.done = store.lag == 0


def rebuild(home: Path, told: Told) -> None:
    with MemoryStore(home, write=True) as store:
        rebuild_views(store)
        told.done = True


@pytest.fixture
def behind(keyed: Path, tmp_path: Path) -> Path:
    """A store whose log holds frames its views have not taken in yet."""
    home = tmp_path / "behind"
    shutil.copytree(keyed, home)
    with MemoryStore(home, catch_up=False, write=True) as store:
        store.ensure_crypto()
        capture(store, seen(0), seen(1, day=1), seen(2, day=40))
    return home


@pytest.mark.parametrize("act", [catch_up, rebuild], ids=["catch-up", "rebuild"])
@pytest.mark.slow
def test_a_power_cut_between_a_views_commit_and_its_manifest_leaves_views_that_recover(
    tmp_path: Path, behind: Path, act: Act
) -> None:
    trace = traced(tmp_path, behind, act)
    assert any(call.startswith("rename manifest.json") for call in trace)
    assert any(call.startswith("rename state") for call in trace)
    for home, _, where in power_cuts(tmp_path, behind, act, trace, torn=False):
        with reopened(home, where) as store:
            frames = check_thumbnails(store, where)
            assert len(frames) == 3, where
            one = [i for i, frame in frames.items() if number_of(frame) == 1]
            assert [hit.id for hit in store.search("frame1")] == one, where


def create_key(home: Path, told: Told) -> None:
    with MemoryStore(home, write=True) as store:
        store.ensure_crypto()
        told.done = True


@pytest.mark.parametrize("torn", [False, True], ids=["unsynced-dropped", "unsynced-partly-kept"])
def test_a_power_cut_while_the_key_is_made_leaves_no_key_or_the_whole_one(
    tmp_path: Path, torn: bool
) -> None:
    empty = tmp_path / "empty"
    MemoryStore(empty, write=True).close()
    trace = traced(tmp_path, empty, create_key)
    assert any(call == "link key" for call in trace)
    assert any(call == "rename keyinfo.json" for call in trace)
    for home, _, where in power_cuts(tmp_path, empty, create_key, trace, torn):
        key_file = home / keys.KEY_FILE
        left = key_file.read_bytes() if key_file.exists() else None
        assert left is None or len(base64.b64decode(left)) == keys.KEY_BYTES, where
        assert (home / keys.KEYINFO_FILE).exists() <= (left is not None), where
        with reopened(home, where) as store:
            assert store.ensure_crypto() is not None, where
            key = keys.load_key(home, create=False)
            assert key is not None
            if left is not None:
                assert key_file.read_bytes() == left, f"{where}: the key was replaced"
            recorded = [e.fingerprint for _, e in store.log.read() if isinstance(e, KeyCreated)]
            assert recorded == [keys.fingerprint(key)], where


def set_config(home: Path, told: Told) -> None:
    with MemoryStore(home, write=True) as store:
        store.set_config(interval_seconds=20.0)
        told.done = True


def take_in_hand_edit(home: Path, told: Told) -> None:
    with MemoryStore(home, write=True) as store:
        told.done = store.config_problem is None


@pytest.fixture
def configured(tmp_path: Path) -> Path:
    home = tmp_path / "configured"
    with MemoryStore(home, write=True) as store:
        store.set_config(interval_seconds=10.0)
    return home


@pytest.fixture
def hand_edited(configured: Path, tmp_path: Path) -> Path:
    home = tmp_path / "hand-edited"
    shutil.copytree(configured, home)
    edit = msgspec.json.decode((home / CONFIG_FILE).read_bytes())
    (home / CONFIG_FILE).write_bytes(msgspec.json.encode({**edit, "interval_seconds": 30.0}))
    return home


@pytest.mark.parametrize("how", ["command", "hand"])
def test_a_power_cut_mid_config_edit_leaves_the_old_config_or_the_new(
    tmp_path: Path, configured: Path, hand_edited: Path, how: str
) -> None:
    template, act, new = {
        "command": (configured, set_config, 20.0),
        "hand": (hand_edited, take_in_hand_edit, 30.0),
    }[how]
    trace = traced(tmp_path, template, act)
    assert any(call.startswith("rename config.sha256") for call in trace)
    for home, told, where in power_cuts(tmp_path, template, act, trace, torn=True):
        with reopened(home, where) as store:
            assert store.config_problem is None, where
            interval = store.config.interval_seconds
            if told.done or how == "hand":
                assert interval == new, where
            assert interval in (10.0, new), where
            on_file = msgspec.json.decode((home / CONFIG_FILE).read_bytes())
            assert on_file["interval_seconds"] in (10.0, new), where


def purge(home: Path, told: Told) -> None:
    with MemoryStore(home, write=True) as store:
        delete(store, app="secret")
        told.done = True


@pytest.mark.slow
def test_a_power_cut_mid_purge_is_finished_by_the_next_process(
    tmp_path: Path, captured: Path
) -> None:
    trace = traced(tmp_path, captured, purge)
    assert any(call.startswith("rename purge.json") for call in trace)
    assert "rename COMPACT" in trace, "the log's compaction is not under the cut"
    for home, told, where in power_cuts(tmp_path, captured, purge, trace, torn=False):
        with reopened(home, where) as store:
            frames = check_thumbnails(store, where)
            requested = any(isinstance(e, FramesDeleted) for _, e in store.log.read())
            assert requested or not told.done, where
            kept = [0, 2, 4] if requested else [0, 1, 2, 3, 4]
            assert sorted(number_of(f) for f in frames.values()) == kept, where
            assert (store.timeline(app="secret") == []) == requested, where
            assert not store.state().pending_deletions(), where


def install_service(root: Path, told: Told, python: str = "/usr/bin/python3") -> None:
    install(
        root / "home",
        platform="linux",
        config_home=root / "config",
        environ={"DISPLAY": ":0", "XAUTHORITY": "/run/user/1000/xauth"},
        runner=lambda argv: subprocess.CompletedProcess(argv, 0, "", ""),
        python=python,
    )
    told.done = True


def test_a_power_cut_while_the_service_is_installed_leaves_the_old_unit_or_the_new(
    tmp_path: Path,
) -> None:
    def unit(root: Path) -> bytes:
        data = (root / "config" / "systemd/user/backscroll.service").read_bytes()
        # It names its home: the template's in an untouched copy, the copy's once rewritten.
        return re.sub(re.escape(str(tmp_path)).encode() + rb"/[^/]+", b"<root>", data)

    old, new = tmp_path / "old", tmp_path / "new"
    install_service(old, Told(), "/opt/old/python3")
    install_service(new, Told())
    trace = traced(tmp_path, old, install_service)
    assert "rename backscroll.service" in trace
    for root, told, where in power_cuts(tmp_path, old, install_service, trace, torn=True):
        assert unit(root) in ({unit(new)} if told.done else {unit(old), unit(new)}), where


def test_the_layer_in_use_is_the_real_one_outside_a_sweep() -> None:
    assert base.fs.current() is base.fs.REAL_FS


def test_a_dead_writers_temporary_is_swept_when_a_writer_opens_the_store_and_a_live_ones_is_not(
    backscroll_home: Path,
) -> None:
    ensure_dir(backscroll_home / "views")
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = backscroll_home / f".key.{gone.pid}-{'ab' * 8}.tmp"  # a power cut mid key write
    dead.write_bytes(b"a copy of the key\n")
    stale_view = backscroll_home / "views" / f".state.{gone.pid}-{'cd' * 8}.tmp"
    stale_view.write_bytes(b"half a view")
    live = backscroll_home / f".config.json.{os.getpid()}-{'ef' * 8}.tmp"
    live.write_bytes(b"{}")
    someone_elses = backscroll_home / ".notes.tmp"
    someone_elses.write_bytes(b"not ours")
    with MemoryStore():  # a reader removes nothing
        pass
    assert dead.exists() and stale_view.exists()
    with MemoryStore(write=True):
        pass
    assert not dead.exists() and not stale_view.exists()
    assert live.exists() and someone_elses.exists()
