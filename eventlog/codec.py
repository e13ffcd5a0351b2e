"""Events to bytes and back, with upcasting of older event versions on read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from eventlog.events import EVENT_TYPES, TYPE_CODES, AnyEvent, Event
from eventlog.segment import Problem, Record

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(AnyEvent)

CODE_TYPES: dict[int, type[Event]] = {code: cls for cls, code in TYPE_CODES.items()}
TAG_TYPES: dict[object, type[Event]] = {cls.__struct_config__.tag: cls for cls in EVENT_TYPES}
CURRENT_VERSION: dict[type[Event], int] = {
    cls: next(f.default for f in msgspec.structs.fields(cls) if f.name == "v")
    for cls in EVENT_TYPES
}

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
# (event type, version it reads) -> function returning the map of the next version.
UPCASTERS: dict[tuple[type[Event], int], Upcaster] = {}


def type_code(event: Event) -> int:
    return TYPE_CODES[type(event)]


def encode(event: Event) -> bytes:
    return _encoder.encode(event)


def check(payload: bytes) -> None:
    """Raise ``msgspec.ValidationError`` unless ``payload`` decodes under the current types,
    with every constraint they declare: what an append is about to write."""
    _decoder.decode(payload)


def decode(payload: bytes | memoryview) -> Event:
    """Decode a record's payload into the current version of its event."""
    try:
        event: Event = _decoder.decode(payload)
    except msgspec.ValidationError:
        # A breaking change (a field renamed or made required) means an old record may not
        # fit the current struct at all: upcast its raw map first.
        data = msgspec.msgpack.decode(payload)
        cls = TAG_TYPES.get(data.get("k")) if isinstance(data, dict) else None
        if cls is None or int(data.get("v", 1)) >= CURRENT_VERSION[cls]:
            raise
        return _upcast(cls, data)
    if event.v == CURRENT_VERSION[type(event)]:
        return event
    return _upcast(type(event), msgspec.msgpack.decode(payload))


def decode_or_report(record: Record, problems: list[Problem] | None) -> Event | None:
    """The record's event, or None (named in ``problems``) when it does not decode under the
    current types."""
    try:
        return decode(record.payload)
    except (ValueError, KeyError, TypeError) as exc:  # msgspec's errors are ValueErrors
        if problems is not None:
            cls = CODE_TYPES.get(record.type)
            kind = f"{cls.__struct_config__.tag} event" if cls else f"event of type {record.type}"
            problems.append(Problem("", 0, record.offset, f"{kind} does not decode: {exc}"))
        return None


def _upcast(cls: type[Event], data: dict[str, Any]) -> Event:
    version = int(data.get("v", 1))
    while version < CURRENT_VERSION[cls]:
        data = UPCASTERS[(cls, version)](data)
        version += 1
        data["v"] = version
    return msgspec.convert(data, cls)
