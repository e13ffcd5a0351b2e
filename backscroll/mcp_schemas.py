"""The JSON Schemas of the MCP tools: their arguments (``inputSchema``) and their results
(``outputSchema``: what ``structuredContent`` holds, the same JSON the result's text carries).

``memory`` and ``memory_manage`` are generated from the answer contract
(``backscroll/contract/``): the arguments from the tools' ``Params`` (which take the
contract's descriptions and limits), the results from the answers of each action and the
refusal, keyed by ``action``. The three tools of the screen-memory spec are written here.
Each result schema is an object whose ``anyOf`` names the shape of each answer and of a
refusal (``error``: one line). Answers may grow fields (objects are open:
``additionalProperties`` is never false), never lose or retype one; ``tests/test_mcp.py``
validates every tool's answers against these with ``jsonschema``.
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


def _generated(*kinds: type) -> Schema:
    """One object schema whose ``anyOf`` is each of ``kinds`` (msgspec's JSON Schema)."""
    import msgspec

    refs, defs = msgspec.json.schema_components(kinds, ref_template="#/$defs/{name}")
    return {"type": "object", "anyOf": list(refs), "$defs": defs}


@cache
def memory() -> Schema:
    from backscroll.contract import READ_ANSWERS, Refusal

    return _generated(*READ_ANSWERS, Refusal)


@cache
def memory_manage() -> Schema:
    from backscroll.contract import MANAGE_ANSWERS, Refusal

    return _generated(*MANAGE_ANSWERS, Refusal)


def input_schema(tool: str) -> Schema | None:
    """The ``inputSchema`` of ``memory`` and ``memory_manage``, from their ``Params``; None
    for the other tools, whose arguments the SDK describes from their signatures."""
    import msgspec

    from backscroll.tools import MemoryManageTool, MemoryTool

    params = {"memory": MemoryTool.Params, "memory_manage": MemoryManageTool.Params}.get(tool)
    if params is None:
        return None
    schema = msgspec.json.schema(params)
    body: Schema = schema["$defs"].pop("Params")
    body.pop("title", None)
    return {**body, **({"$defs": schema["$defs"]} if schema["$defs"] else {})}


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
