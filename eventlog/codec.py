"""Events to bytes and back, with upcasting of older event versions on read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from eventlog.events import EVENT_TYPES, TYPE_CODES, AnyEvent, Event
from eventlog.segment import Problem, Record

_encoder = msgspec.msgpack.Encoder()
_decoder: msgspec.msgpack.Decoder[AnyEvent] | None = None


def _new_decoder() -> msgspec.msgpack.Decoder[AnyEvent]:
    """Made at the first decode: msgspec resolves every event type's annotations to make it,
    which a command that decodes no event (status, search) does not need; with
    ``CURRENT_VERSION`` read the same way, 0.2x Python's own start."""
    global _decoder
    _decoder = msgspec.msgpack.Decoder(AnyEvent)
    return _decoder


def _version(cls: type[Event]) -> int:
    """The default of ``cls``'s field ``v``, read from the Struct without resolving its
    annotations (as ``msgspec.structs.fields`` does, for every event type at import)."""
    names = cls.__struct_fields__
    defaults = cls.__struct_defaults__
    return int(defaults[names.index("v") - (len(names) - len(defaults))])


CODE_TYPES: dict[int, type[Event]] = {code: cls for cls, code in TYPE_CODES.items()}
TAG_TYPES: dict[object, type[Event]] = {cls.__struct_config__.tag: cls for cls in EVENT_TYPES}
CURRENT_VERSION: dict[type[Event], int] = {cls: _version(cls) for cls in EVENT_TYPES}

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
    (_decoder or _new_decoder()).decode(payload)


def decode(payload: bytes | memoryview) -> Event:
    """Decode a record's payload into the current version of its event."""
    try:
        event: Event = (_decoder or _new_decoder()).decode(payload)
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
