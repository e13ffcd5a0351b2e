"""Nothing a user types, a file holds or a disk does bricks the store or drops data silently.

Each test here reproduces a defect found by trying Backscroll as a hostile user would, and
fails on the code before the fix.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eventlog.segment
from backscroll.importer import import_frames
from backscroll.manage import delete, discard_damaged
from backscroll.reindex import reindex
from backscroll.store import MemoryStore
from base.errors import UsageError
from eventlog import codec
from eventlog.events import DamageFound, FrameCaptured
from eventlog.format import BLOCK, HEADER
from eventlog.log import Log
from eventlog.segment import pack_record
from tests.helpers import run

T = 1_764_600_000  # 2025-12-01, epoch seconds


def line(i: int, app: str = "Terminal", text: str = "") -> str:
    body = text or f"word{i:05d} " + " ".join(f"filler{j}" for j in range(40))
    return json.dumps({"ts": T + i, "app": app, "title": f"{app} window", "text": body})


def import_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, numbers: range | list[int]
) -> Path:
    """Import frames ``numbers`` through the CLI; returns the file, for another import."""
    source = tmp_path / "frames.jsonl"
    source.write_text("\n".join(line(i) for i in numbers) + "\n")
    code, _, err = run(capsys, "import", str(source))
    assert code == 0, err
    return source


def log_bytes(home: Path) -> dict[str, bytes]:
    log = home / "log"
    return {str(p): p.read_bytes() for p in sorted(log.rglob("*")) if p.is_file()}


def smuggle(home: Path, event: FrameCaptured) -> int:
    """Write an event straight into the active segment, past the append's checks: what an
    older version's bug or a hand-made segment leaves in a log."""
    log = Log(home / "log")
    offset = log.next_offset()
    payload = msgspec.msgpack.encode(msgspec.structs.replace(event, frame_id=offset))
    active = log.segments()[-1].path
    with open(active, "ab") as f:
        f.write(pack_record(1, offset, payload))
    return offset


def test_an_event_the_views_cannot_project_is_never_appended(backscroll_home: Path) -> None:
    with MemoryStore(write=True) as store:
        import_frames(store, [line(1)])
        before = log_bytes(backscroll_home)
        bad = FrameCaptured(
            ts_us=1, frame_id=store.log.next_offset(), captured_us=-5_000_000, app="a", title="b"
        )
        with pytest.raises(UsageError, match="captured_us"):
            store.log.append(bad)
    assert log_bytes(backscroll_home) == before


def test_an_import_line_with_a_negative_time_is_refused_and_changes_nothing(
    tmp_path: Path, backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text(line(1) + "\n")
    assert run(capsys, "import", str(source))[0] == 0
    before = log_bytes(backscroll_home)
    source.write_text(json.dumps({"ts": -5, "app": "a", "title": "b", "text": "c"}) + "\n")
    code, _, err = run(capsys, "import", str(source))
    assert code == 1 and err.count("\n") == 1 and "'ts' -5 is before 1970" in err
    assert log_bytes(backscroll_home) == before


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"ts": 1e300, "app": "a", "title": "b", "text": "c"}', "in the future"),
        (b'{"ts": NaN, "app": "a", "title": "b", "text": "c"}', "is not a time"),
        (b"\xff\xfe\x00binary\x9c", "not UTF-8"),
        (b'{"ts": 1, "app": "\\ud800", "title": "b", "text": "c"}', "lone surrogate"),
        (b'{"ts": 4102444800, "app": "a", "title": "b", "text": "c"}', "in the future"),
        (b'{"ts": 1, "app": 5, "title": "b", "text": "c"}', "'app' must be a string, not 5"),
    ],
)
def test_import_lines_that_cannot_be_frames_are_one_line_each(
    raw: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_bytes(raw + b"\n")
    code, out, err = run(capsys, "import", str(source))
    assert code == 1 and message in err and err.count("\n") == 1, err
    assert "Traceback" not in out + err


def test_one_event_that_does_not_decode_never_bricks_the_store(
    tmp_path: Path, backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = import_lines(capsys, tmp_path, range(3))
    bad = smuggle(
        backscroll_home,
        FrameCaptured(ts_us=1, frame_id=0, captured_us=-5_000_000, app="a", title="b"),
    )
    source.write_text(line(9) + "\n")
    for args in (
        ["status"],
        ["search", "word00001"],
        ["timeline"],
        ["import", str(source)],
        ["reindex", "--views-only"],
        ["clear", "--app", "nothing-matches", "-y"],
    ):
        code, out, err = run(capsys, *args)
        assert code == 0, (args, out, err)
    code, out, _ = run(capsys, "status")
    assert f"skipped:   event #{bad}" in out
    code, out, _ = run(capsys, "verify")
    assert code == 1 and f"offset {bad}: frame event does not decode" in out
    assert "word00001" in run(capsys, "search", "word00001")[1]

    code, out, _ = run(capsys, "clear", "--damaged", "-y")
    assert code == 0 and "1 event(s) that did not decode" in out
    assert run(capsys, "verify")[0] == 0
    assert "skipped" not in run(capsys, "status")[1]
    assert "word00009" in run(capsys, "search", "word00009")[1]


def _sealed_store(home: Path, frames: int = 400) -> MemoryStore:
    store = MemoryStore(home, write=True)
    store.log.segment_bytes = 16 * 1024  # seal often: the rewrites meet sealed segments
    for start in range(0, frames, 25):
        apps = ["Terminal", "Browser", "Slack", "Editor"]
        import_frames(store, [line(i, apps[i % 4]) for i in range(start, min(frames, start + 25))])
    assert sum(s.sealed for s in store.log.segments()) >= 2
    return store


def _flip_in_first_block(store: MemoryStore) -> tuple[Path, int]:
    first = store.log.segments()[0].path
    data = bytearray(first.read_bytes())
    at = HEADER.size + BLOCK.size + 40  # inside the first block's compressed data
    data[at] ^= 0xFF
    first.write_bytes(bytes(data))
    return first, at


def _frames(store: MemoryStore) -> dict[int, tuple[str, int]]:
    return {
        e.frame_id: (e.app, e.captured_us)
        for _, e in store.log.read()
        if isinstance(e, FrameCaptured)
    }


@pytest.mark.parametrize("rewrite", ["clear --app", "reindex", "retention"])
@pytest.mark.slow
def test_a_rewrite_keeps_damaged_bytes_aside_and_reports_them_until_discarded(
    backscroll_home: Path, rewrite: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eventlog.segment, "BLOCK_BYTES", 2048)  # several blocks a segment
    store = _sealed_store(backscroll_home)
    everything = _frames(store)
    first, _ = _flip_in_first_block(store)
    damaged_bytes = first.read_bytes()
    readable = _frames(store)
    lost = set(everything) - set(readable)
    assert lost and any("damaged block" in p.message for p in store.log.verify())

    if rewrite == "clear --app":
        delete(store, app="Slack")
        expected = {i: f for i, f in readable.items() if f[0] != "Slack"}
    elif rewrite == "reindex":
        store.set_config(encrypt_text=True)
        reindex(store)
        expected = readable
    else:
        cutoff = sorted(f[1] for f in readable.values())[1]  # the oldest readable expires
        store.log.retain(cutoff)
        expected = {i: f for i, f in readable.items() if f[1] >= cutoff}
    assert _frames(store) == expected  # every frame outside the damaged range is intact

    problems = store.log.verify()
    if rewrite == "clear --app":
        # The copy does not decompress, so it may hold Slack's text: it goes with the frames.
        assert len(problems) == 1 and "removed by a deletion" in problems[0].message, problems
        assert store.log.kept_aside() == []
    else:
        kept = [p for p in problems if "kept aside" in p.message]
        assert len(kept) == 1 and kept[0].segment == first.name, problems
        aside = store.log.kept_aside()
        assert [p.read_bytes() for p in aside] == [
            damaged_bytes[kept[0].position : kept[0].position + kept[0].length]
        ]
    damage = [e for _, e in store.log.read() if isinstance(e, DamageFound)]
    assert len(damage) == 1 and damage[0].first_offset <= min(lost)
    assert damage[0].last_offset >= max(lost)
    store.refresh()
    assert len(store.state().damage) == 1

    discard_damaged(store)
    assert store.log.verify() == [] and store.log.kept_aside() == []
    store.refresh()
    assert store.state().damage == []


@settings(
    max_examples=int(os.environ.get("BACKSCROLL_FUZZ_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), sealed=st.booleans(), rewrite=st.sampled_from(range(3)))
@pytest.mark.slow
def test_flipped_bytes_survive_every_rewrite_as_reported_damage(
    tmp_path_factory: pytest.TempPathFactory, seed: int, sealed: bool, rewrite: int
) -> None:
    rng = random.Random(seed)
    log = Log(tmp_path_factory.mktemp("log"), segment_bytes=16 * 1024)
    for i in range(120):
        frame = FrameCaptured(
            ts_us=1,
            frame_id=log.next_offset(),
            captured_us=(T + i) * 1_000_000,
            app=("a", "b")[i % 2],
            title="t",
            text=f"w{i} " * rng.randrange(5, 60),
        )
        log.append(frame)
    candidates = [s for s in log.segments() if s.sealed == sealed]
    segment = rng.choice(candidates)
    data = bytearray(segment.path.read_bytes())
    at = rng.randrange(HEADER.size, len(data))
    data[at] ^= 1 << rng.randrange(8)
    segment.path.write_bytes(bytes(data))
    before = {o: e for o, e in log.read()}
    reported = bool(log.verify())

    if rewrite == 0:
        log.compact(lambda _, e: None if isinstance(e, FrameCaptured) and e.app == "b" else e)
        expected = {o: e for o, e in before.items() if e.app != "b"}  # type: ignore[attr-defined]
    elif rewrite == 1:
        log.retain(1)
        expected = before
    else:
        for _ in range(40):  # appends that roll and seal the active segment
            with log.batch() as batch:  # the id is known inside: the damage found goes first
                batch.append(
                    FrameCaptured(
                        ts_us=1,
                        frame_id=batch.next_offset,
                        captured_us=T * 10**6,
                        app="c",
                        title="t",
                    )
                )
        expected = before
    after = {o: e for o, e in log.read()}
    assert {o: after[o] for o in expected} == expected  # nothing readable was lost
    if reported:
        assert log.verify(), "the damage was reported before the rewrite and is not now"


def test_config_json_that_is_not_an_object_or_is_empty_is_refused_and_shown(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "deny", "add", "MyBank")[0] == 0
    path = backscroll_home / "config.json"
    for edit in ("[]", "{}", "5", "null"):
        path.write_text(edit)
        code, out, err = run(capsys, "status")
        assert code == 0 and "config.json edit refused" in out, (edit, out, err)
        assert run(capsys, "verify")[0] == 0
        assert "MyBank" in run(capsys, "deny", "list")[1]


def test_a_hand_edit_that_weakens_privacy_is_recorded_and_shown(
    backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "deny", "add", "MyBank")[0] == 0
    path = backscroll_home / "config.json"
    data = json.loads(path.read_text())
    data["redact"] = False
    data["deny_apps"] = [p for p in data["deny_apps"] if p != "MyBank"]
    path.write_text(json.dumps(data))
    out = run(capsys, "status")[1]  # a reader: the edit is pending, not taken in
    assert "config.json edited by hand: taken in by the daemon or the next command" in out
    assert "redaction turned off" not in out
    assert run(capsys, "config")[0] == 0  # a writer takes it in
    out = run(capsys, "status")[1]
    assert "a hand edit of config.json" in out and "edited by hand" not in out
    assert "redaction turned off" in out and "taken off the deny list: MyBank" in out
    out = run(capsys, "log", "--kind", "config")[1]
    assert "weakened" in out and "MyBank" in out
    # A partial edit takes defaults for what it leaves out, and says what that weakens.
    path.write_text(json.dumps({"retention_days": 7}))
    assert run(capsys, "config")[0] == 0
    assert "redaction turned off" not in run(capsys, "status")[1]


def test_an_empty_scope_is_an_error_never_everything(
    tmp_path: Path, backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_lines(capsys, tmp_path, range(5))
    before = log_bytes(backscroll_home)
    for args in (["--app", ""], ["--app", "  "], ["--before", ""], ["--since", ""]):
        code, _, err = run(capsys, "clear", *args, "-y")
        assert code == 1 and err.count("\n") == 1, (args, err)
    assert log_bytes(backscroll_home) == before
    assert json.loads(run(capsys, "status", "--json")[1])["frames"] == 5


def test_a_damaged_compaction_manifest_is_finished_not_a_traceback(
    tmp_path: Path, backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_lines(capsys, tmp_path, range(5))
    (backscroll_home / "log" / "COMPACT").write_bytes(b'{"install": [')
    code, _, err = run(capsys, "pause", "10m")
    assert code == 0, err
    assert not (backscroll_home / "log" / "COMPACT").exists()
    assert run(capsys, "verify")[0] == 0


@pytest.mark.parametrize("which", ["active", "every"])
def test_a_segment_deleted_by_hand_is_reported_not_healed(
    tmp_path: Path, backscroll_home: Path, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    source = import_lines(capsys, tmp_path, range(5))
    for segment in sorted((backscroll_home / "log").glob("*.seg")):
        segment.unlink()
    if which == "every":
        for segment in (backscroll_home / "log").glob("*.zst"):
            segment.unlink()
    code, out, _ = run(capsys, "verify")
    assert code == 1 and "missing" in out, out
    assert run(capsys, "reindex", "--views-only")[0] == 0
    code, out, _ = run(capsys, "verify")
    assert code == 1 and "lost offsets" in out, out
    assert "lost" in run(capsys, "status")[1]
    # The lost offsets are never handed out again: a new frame gets a new id.
    source.write_text(line(7) + "\n")
    assert run(capsys, "import", str(source))[0] == 0
    hit = json.loads(run(capsys, "search", "word00007", "--json")[1])["matches"][0]
    assert hit["id"] > 5


def test_export_and_show_take_any_number_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_lines(capsys, tmp_path, range(3))
    code, out, err = run(capsys, "export", "--limit", "100000000", "--out", str(tmp_path / "e"))
    assert code == 0 and "3" in out, err
    for args in (
        ["export", "--limit", "99999999999999999999999", "--out", str(tmp_path / "f")],
        ["show", "99999999999999999999999999"],
        ["show", "-1"],
        ["config", "--cap", "99999999999999999999"],
    ):
        code, out, err = run(capsys, *args)
        assert code in (1, 2) and err.count("\n") == 1 and "Traceback" not in err, (args, err)


@pytest.mark.parametrize(
    "args",
    [
        ["config", "--hotkey", "garbage"],
        ["config", "--hotkey", "<ctrl>+<nope>"],
        ["config", "--hotkey", "<ctrl>++"],
        ["config", "--interval", "inf"],
        ["config", "--interval", "nan"],
        ["deny", "add", ""],
        ["deny", "remove", ""],
        ["pause", ""],
        ["log", "--kind", "nope"],
        ["search", "x", "--since", "today", "--until", "yesterday"],
    ],
)
def test_values_that_parse_but_mean_nothing_are_refused(
    args: list[str], backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "status")
    before = log_bytes(backscroll_home)
    code, _, err = run(capsys, *args)
    assert code == 1 and err.count("\n") == 1, (args, err)
    assert log_bytes(backscroll_home) == before


def test_codec_check_is_what_decode_accepts() -> None:
    ok = FrameCaptured(ts_us=1, frame_id=0, captured_us=1, app="a", title="b")
    codec.check(codec.encode(ok))
    with pytest.raises(msgspec.ValidationError):
        codec.check(codec.encode(msgspec.structs.replace(ok, captured_us=-1)))


def test_a_hand_made_damage_event_cannot_point_clear_damaged_at_other_files(
    tmp_path: Path, backscroll_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_lines(capsys, tmp_path, range(2))
    assert run(capsys, "deny", "add", "MyBank")[0] == 0  # writes config.json
    target = backscroll_home / "config.json"
    assert target.exists()
    with MemoryStore(write=True) as store:
        for aside in ("../config.json", "LOCK", "NEXT", "damaged/../../config.json"):
            store.log.append(
                DamageFound(ts_us=1, segment="x", first_offset=0, last_offset=0, aside=aside)
            )
    assert run(capsys, "clear", "--damaged", "-y")[0] == 0
    assert target.exists()
    assert (backscroll_home / "log" / "LOCK").exists()
    assert (backscroll_home / "log" / "NEXT").exists()
