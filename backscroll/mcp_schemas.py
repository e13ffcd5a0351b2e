"""The JSON Schemas of the MCP tools' results (``outputSchema``): what ``structuredContent``
holds, the same JSON the result's text carries.

Each schema is an object whose ``anyOf`` names the shape of each action's answer (keyed by
``action`` where a tool has several) and of a refusal (``error``: one line). Answers may grow
fields (objects are open: ``additionalProperties`` is never false), never lose or retype one;
``tests/test_mcp.py`` validates every tool's answers against these with ``jsonschema``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

Schema = dict[str, Any]

STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer"}
NUMBER: Schema = {"type": "number"}
BOOLEAN: Schema = {"type": "boolean"}
STRING_OR_NULL: Schema = {"type": ["string", "null"]}
TIME: Schema = {"type": "string", "description": "ISO 8601, local time with its offset"}
TIME_OR_NULL: Schema = {"type": ["string", "null"], "description": TIME["description"]}
IDS: Schema = {"type": "array", "items": INTEGER}


def _object(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
    }


def _answers(*shapes: Schema) -> Schema:
    """A tool's result: one of ``shapes``, or a refusal."""
    refusal = _object(
        {"error": {"type": "string", "description": "Why it was refused, on one line"}},
        {"action": STRING, "approved": BOOLEAN},
    )
    return {"type": "object", "anyOf": [*shapes, refusal]}


def _action(
    name: str, fields: dict[str, Schema], optional: dict[str, Schema] | None = None
) -> Schema:
    return _object({"action": {"const": name}, **fields}, optional)


SCOPE: dict[str, Schema] = {"start": TIME_OR_NULL, "end": TIME_OR_NULL, "app": STRING_OR_NULL}

FRAME = _object(
    {
        "id": INTEGER,
        "time": TIME,
        "app": STRING,
        "title": STRING,
        "text_source": {"enum": ["ax", "ocr", "none"]},
        "encrypted": BOOLEAN,
        "reason": STRING,
        "thumbnail": BOOLEAN,
        "thumbnail_encrypted": BOOLEAN,
    },
    {"snippet": STRING, "score": NUMBER, "near_miss": BOOLEAN},
)

MATCH: Schema = {
    **FRAME,
    "description": "A moment: its best frame, and every frame of it (oldest first)",
    "properties": {
        **FRAME["properties"],
        "frame_ids": IDS,
        "seen": {"type": "array", "items": TIME},
        "first_seen": TIME,
        "last_seen": TIME,
    },
    "required": [*FRAME["required"], "frame_ids", "seen", "first_seen", "last_seen"],
}


@cache
def _status_fields() -> tuple[dict[str, Schema], list[str]]:
    """``status``'s fields, from the ``Status`` record that makes them; the daemon is its
    heartbeat's fields and its state, flattened (``Daemon.to_dict``)."""
    import msgspec

    from backscroll.status import Status

    defs = msgspec.json.schema(Status)["$defs"]
    record = defs["Status"]
    fields = dict(record["properties"])
    fields["daemon"] = _object({"state": defs["Daemon"]["properties"]["state"]})
    return fields, list(record["required"])


def _status() -> Schema:
    fields, required = _status_fields()
    return {
        "type": "object",
        "properties": {"action": {"const": "status"}, **fields},
        "required": ["action", *required],
    }


@cache
def memory() -> Schema:
    return _answers(
        _action(
            "search",
            {
                **SCOPE,
                "query": STRING,
                "ids": {**IDS, "description": "Each match's best frame id, best first"},
                "matches": {"type": "array", "items": MATCH},
                "why_empty": STRING_OR_NULL,
            },
        ),
        {
            **FRAME,
            "properties": {
                **FRAME["properties"],
                "action": {"const": "show"},
                "ids": IDS,
                "image": BOOLEAN,
            },
            "required": ["action", *FRAME["required"], "ids", "image"],
        },
        _action(
            "timeline",
            {
                **SCOPE,
                "ids": IDS,
                "frames": {"type": "array", "items": FRAME},
                "groups": INTEGER,
                "why_empty": STRING_OR_NULL,
            },
        ),
        _status(),
    )


@cache
def screen_memory_status() -> Schema:
    return _answers(
        _object(
            {
                "recording": BOOLEAN,
                "capture": STRING,
                "daemon": STRING,
                "local_only": {"const": True},
                "frames": INTEGER,
                "oldest": STRING_OR_NULL,
                "newest": STRING_OR_NULL,
                "apps": INTEGER,
                "text_sources": {"type": "object", "additionalProperties": INTEGER},
                "thumbnails": INTEGER,
                "encrypt_text": BOOLEAN,
                "encrypt_thumbnails": BOOLEAN,
                "retention_days": INTEGER,
            }
        )
    )


@cache
def screen_memory_recent_context() -> Schema:
    window = _object(
        {
            "app": STRING,
            "title": STRING,
            "start": TIME,
            "end": TIME,
            "frames": INTEGER,
            "id": INTEGER,
            "excerpt": STRING,
        }
    )
    return _answers(
        _object(
            {
                "minutes": INTEGER,
                "since": TIME,
                "windows": {"type": "array", "items": window},
                "more_windows": INTEGER,
                "why_empty": STRING_OR_NULL,
            }
        )
    )


@cache
def screen_memory_recent_segments() -> Schema:
    segment = _object(
        {"app": STRING, "title": STRING, "start": TIME, "end": TIME, "frame_ids": IDS}
    )
    return _answers(
        _object(
            {
                "minutes": INTEGER,
                "since": TIME,
                "segments": {"type": "array", "items": segment},
                "why_empty": STRING_OR_NULL,
            }
        )
    )


@cache
def memory_manage() -> Schema:
    return _answers(
        _action("pause", {"until": TIME_OR_NULL}),
        _action("resume", {}),
        _action("deny", {"deny_apps": {"type": "array", "items": STRING}}),
        _action(
            "config",
            {"changed": {"type": "array", "items": STRING}, "config": {"type": "object"}},
        ),
        _action("delete", {**SCOPE, "deleted": INTEGER}),
        _action(
            "export",
            {
                **SCOPE,
                "path": STRING,
                "format": {"enum": ["json", "csv", "html"]},
                "frames": INTEGER,
                "thumbnails": INTEGER,
                "approved": {"const": True},
            },
        ),
    )


def output_schema(tool: str) -> Schema:
    """The ``outputSchema`` of ``tool``, one of the server's tools."""
    schemas = {
        "memory": memory,
        "screen_memory_status": screen_memory_status,
        "screen_memory_recent_context": screen_memory_recent_context,
        "screen_memory_recent_segments": screen_memory_recent_segments,
        "memory_manage": memory_manage,
    }
    return schemas[tool]()
