"""Every event type round-trips through the codec, the record framing and the log on disk;
old event versions are upcast on read."""

from __future__ import annotations

import io
import types
import typing
from pathlib import Path
from typing import Any, Literal

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import codec
from eventlog.events import (
    EVENT_TYPES,
    TYPE_CODES,
    CaptureResumed,
    ConfigChanged,
    DamageFound,
    Event,
    FrameCaptured,
    FramesDeleted,
)
from eventlog.format import HEADER
from eventlog.log import Log
from eventlog.segment import (
    Header,
    Record,
    _sealed_records,
    encode_sealed,
    pack_record,
    scan_file,
    scan_records,
)

INT64 = st.integers(-(2**63), 2**63 - 1)

# What a config (or any free-form map) may hold and get back equal: MessagePack has no tuple,
# and NaN is not equal to itself.
json_like = st.recursive(
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


def strategy_for(tp: Any) -> st.SearchStrategy[Any]:
    """Values of a field's type that survive MessagePack (64-bit integers, valid UTF-8)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    simple: dict[Any, st.SearchStrategy[Any]] = {
        int: INT64,
        str: st.text(max_size=40),
        bytes: st.binary(max_size=40),
        bool: st.booleans(),
        type(None): st.none(),
        Any: json_like,
    }
    if tp in simple:
        return simple[tp]
    if origin is typing.Annotated:  # a constrained field: values within its Meta
        base, *metas = args
        meta = next(m for m in metas if isinstance(m, msgspec.Meta))
        if base is int:
            lo = -(2**63) if meta.ge is None else meta.ge
            return st.integers(lo, 2**63 - 1 if meta.le is None else meta.le)
        if base is str and meta.pattern is not None:
            return st.from_regex(meta.pattern, fullmatch=True)
        if base is str:
            return st.text(min_size=meta.min_length or 0, max_size=40)
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([strategy_for(arg) for arg in args])
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return st.lists(strategy_for(args[0]), max_size=5).map(tuple)
    if origin is tuple:
        return st.tuples(*(strategy_for(arg) for arg in args))
    if origin is dict:
        return st.dictionaries(strategy_for(args[0]), strategy_for(args[1]), max_size=5)
    raise TypeError(f"no strategy for {tp!r}: add one when an event gains a new field type")


def events(cls: type[Event]) -> st.SearchStrategy[Event]:
    """Any event of type ``cls``, every field drawn (``v`` stays the current version)."""
    fields = {f.name: strategy_for(f.type) for f in msgspec.structs.fields(cls) if f.name != "v"}
    return st.builds(cls, **fields)


def with_id(event: Event, offset: int) -> Event:
    """A frame's id is its offset: give a drawn frame the one the log will give it."""
    if isinstance(event, FrameCaptured):
        return msgspec.structs.replace(event, frame_id=offset)
    return event


def test_every_event_type_has_a_unique_type_code_and_tag() -> None:
    assert set(TYPE_CODES) == set(EVENT_TYPES)
    assert len(set(TYPE_CODES.values())) == len(EVENT_TYPES)
    assert len(set(codec.TAG_TYPES)) == len(EVENT_TYPES)


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda cls: cls.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_event_type_round_trips_through_the_codec(cls: type[Event], data: Any) -> None:
    event = data.draw(events(cls))
    decoded = codec.decode(codec.encode(event))
    assert type(decoded) is cls
    assert decoded == event
    assert codec.CODE_TYPES[codec.type_code(event)] is cls


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda cls: cls.__name__)
def test_every_event_type_round_trips_through_the_log(cls: type[Event], tmp_path: Path) -> None:
    # Small segments, so the read-back at the end also goes through sealed, compressed ones.
    log = Log(tmp_path / "log", segment_bytes=1024)
    written: list[tuple[int, Event]] = []

    @settings(max_examples=30, deadline=None)
    @given(st.lists(events(cls), min_size=1, max_size=4))
    def append_then_read_back(drawn: list[Event]) -> None:
        with log.batch() as batch:
            appended = []
            for event in drawn:
                event = with_id(event, batch.next_offset)
                appended.append((batch.append(event), event))
        assert list(log.read(appended[0][0])) == appended
        written.extend(appended)

    append_then_read_back()
    assert any(segment.sealed for segment in log.segments())
    assert list(Log(log.path).read()) == written
    problems = log.verify()
    if cls is DamageFound:  # the damage they describe is reported, and nothing else
        assert all("lost" in p.message or "gone" in p.message for p in problems), problems
        assert log.kept_aside() == []  # no event points it at a file the log did not make
    else:
        assert problems == []


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 20), st.integers(0, 3), st.binary(max_size=300)),
        max_size=40,
    ),
    st.integers(0, 1000),
)
def test_records_round_trip_through_active_framing_and_sealed_blocks(
    drawn: list[tuple[int, int, bytes]], start: int
) -> None:
    records, offset = [], 0
    for type_code, gap, payload in drawn:
        offset += gap  # compaction leaves gaps
        records.append(Record(offset, type_code + 1, payload))  # +1: never a frame's code
        offset += 1
    active = b"\0" * HEADER.size + b"".join(
        pack_record(r.type, r.offset, r.payload) for r in records
    )
    scan = scan_records(active, HEADER.size, "test")
    assert [r for _, r in scan.records] == records
    assert not scan.torn and scan.problems == []

    sealed = encode_sealed(Header(0, 0, 0, end_offset=offset), records)
    problems: list[Any] = []
    assert list(_sealed_records(sealed, "test", start, problems)) == [
        r for r in records if r.offset >= start
    ]
    assert problems == []


@given(
    st.lists(st.binary(max_size=300), min_size=1, max_size=30),
    st.integers(1, 700),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), max_size=3),
    st.integers(0, 400),
    st.booleans(),
)
def test_reading_a_file_in_chunks_finds_what_one_read_finds(
    payloads: list[bytes],
    chunk: int,
    flips: list[tuple[int, int]],
    cut: int,
    keep: bool,
) -> None:
    """Whatever the chunk size, damage or tear: the same records, problems and end."""
    data = bytearray(
        b"\0" * HEADER.size
        + b"".join(pack_record(2, offset, payload) for offset, payload in enumerate(payloads))
    )
    for at, xor in flips:
        data[HEADER.size + at % (len(data) - HEADER.size)] ^= xor
    data = data[: len(data) - cut % len(data)] if len(data) > HEADER.size + cut else data
    whole = scan_records(bytes(data), HEADER.size, "test", payloads=keep)
    pieces = list(
        scan_file(io.BytesIO(data), HEADER.size, len(data), "test", payloads=keep, chunk=chunk)
    )
    assert [r for piece in pieces for r in piece.records] == whole.records
    assert [p for piece in pieces for p in piece.problems] == whole.problems
    assert (pieces[-1].end, pieces[-1].torn) == (whole.end, whole.torn)


def test_each_event_types_current_version_is_its_field_v_default() -> None:
    """Read from the Struct's own tuples, as ``msgspec.structs.fields`` gives it."""
    for cls in EVENT_TYPES:
        [v] = [f.default for f in msgspec.structs.fields(cls) if f.name == "v"]
        assert codec.CURRENT_VERSION[cls] == v, cls


# -- upcasting ---------------------------------------------------------------------------------


def make_current(monkeypatch: pytest.MonkeyPatch, cls: type[Event], version: int) -> None:
    """Pretend ``cls`` is now at ``version``: records written until now are older."""
    versions: dict[type[Event], int] = codec.CURRENT_VERSION
    monkeypatch.setitem(versions, cls, version)


def register(
    monkeypatch: pytest.MonkeyPatch, cls: type[Event], version: int, upcaster: codec.Upcaster
) -> None:
    upcasters: dict[tuple[type[Event], int], codec.Upcaster] = codec.UPCASTERS
    monkeypatch.setitem(upcasters, (cls, version), upcaster)


def test_an_old_version_is_upcast_on_read(monkeypatch: pytest.MonkeyPatch) -> None:
    old = CaptureResumed(ts_us=1, origin="cli")  # written when v=1 was current
    make_current(monkeypatch, CaptureResumed, 2)
    register(monkeypatch, CaptureResumed, 1, lambda m: {**m, "origin": "daemon"})

    decoded = codec.decode(codec.encode(old))

    assert decoded == CaptureResumed(ts_us=1, origin="daemon", v=2)


def test_upcasters_chain_through_every_version(monkeypatch: pytest.MonkeyPatch) -> None:
    make_current(monkeypatch, ConfigChanged, 3)
    register(monkeypatch, ConfigChanged, 1, lambda m: {**m, "config": {"v1": m["config"]}})
    register(monkeypatch, ConfigChanged, 2, lambda m: {**m, "config": {"v2": m["config"]}})

    decoded = codec.decode(codec.encode(ConfigChanged(ts_us=1, config={"a": 1})))

    assert decoded == ConfigChanged(ts_us=1, config={"v2": {"v1": {"a": 1}}}, v=3)


def test_a_record_of_the_current_version_is_not_upcast(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(m: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("upcaster ran on a current record")

    register(monkeypatch, CaptureResumed, 1, fail)
    event = CaptureResumed(ts_us=1)
    assert codec.decode(codec.encode(event)) == event


def test_an_old_record_that_no_longer_fits_the_struct_is_upcast_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A breaking change: v1 of FramesDeleted called ``upto_id`` ``last_id``. The old map cannot
    # be decoded into today's struct (a required field is missing) before the upcaster runs.
    old = msgspec.msgpack.encode({"k": "delete", "ts_us": 5, "v": 1, "last_id": 7})
    make_current(monkeypatch, FramesDeleted, 2)

    def rename(m: dict[str, Any]) -> dict[str, Any]:
        m = dict(m)
        m["upto_id"] = m.pop("last_id")
        return m

    register(monkeypatch, FramesDeleted, 1, rename)

    assert codec.decode(old) == FramesDeleted(ts_us=5, upto_id=7, v=2)


def test_a_record_that_fits_no_version_still_fails_loudly() -> None:
    bad = msgspec.msgpack.encode({"k": "delete", "ts_us": 5, "v": 1})
    with pytest.raises(msgspec.ValidationError):
        codec.decode(bad)


def test_old_records_in_the_log_are_upcast_when_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = Log(tmp_path / "log", segment_bytes=256)
    for i in range(6):  # small segments: some of these end up sealed
        log.append(CaptureResumed(ts_us=i, origin="cli"))
    make_current(monkeypatch, CaptureResumed, 2)
    register(monkeypatch, CaptureResumed, 1, lambda m: {**m, "origin": "tool"})

    assert any(segment.sealed for segment in log.segments())
    assert list(log.read()) == [(i, CaptureResumed(ts_us=i, origin="tool", v=2)) for i in range(6)]
