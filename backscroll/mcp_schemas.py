"""The JSON Schemas of the MCP tools: their arguments (``inputSchema``) and their results
(``outputSchema``: what ``structuredContent`` holds, the same JSON the result's text carries).

Every schema is generated from the answer contract (``backscroll/contract/``): the arguments
from each tool's request (``memory`` and ``memory_manage``: the tools' ``Params``, which
take the contract's descriptions and limits), the results from the answers and the refusal
(``memory`` and ``memory_manage`` keyed by ``action``). Each result schema is an object
whose ``anyOf`` names the shape of each answer and of a refusal (``error``: one line).
Answers may grow fields (objects are open: ``additionalProperties`` is never false), never
lose or retype one; ``tests/test_mcp.py`` validates every tool's answers against these with
``jsonschema``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

Schema = dict[str, Any]


def _generated(*kinds: type) -> Schema:
    """A tool's result: one object schema whose ``anyOf`` is each of ``kinds``, its answers
    and the refusal (msgspec's JSON Schema)."""
    import msgspec

    refs, defs = msgspec.json.schema_components(kinds, ref_template="#/$defs/{name}")
    return {"type": "object", "anyOf": list(refs), "$defs": defs}


@cache
def memory() -> Schema:
    from backscroll.contract import READ_ANSWERS, Refusal
    from backscroll.contract.summary import SummaryAnswer

    return _generated(*READ_ANSWERS, SummaryAnswer, Refusal)


@cache
def memory_manage() -> Schema:
    from backscroll.contract import MANAGE_ANSWERS, Refusal

    return _generated(*MANAGE_ANSWERS, Refusal)


def input_schema(tool: str) -> Schema | None:
    """The ``inputSchema`` of a tool that takes arguments, from its request (``memory`` and
    ``memory_manage``: their ``Params``); None for ``screen_memory_status``, which takes
    none."""
    import msgspec

    from backscroll.contract.screen_memory import ContextRequest, StretchesRequest
    from backscroll.keep_tools import KeptMemoryTool, KeptMemoryWriteTool
    from backscroll.tools import MemoryManageTool, MemoryTool

    params = {
        "memory": MemoryTool.Params,
        "memory_manage": MemoryManageTool.Params,
        "screen_memory_recent_context": ContextRequest,
        "screen_memory_recent_segments": StretchesRequest,
        "kept_memory": KeptMemoryTool.Params,
        "kept_memory_write": KeptMemoryWriteTool.Params,
    }.get(tool)
    if params is None:
        return None
    schema = msgspec.json.schema(params)
    body: Schema = schema["$defs"].pop(params.__name__)
    body.pop("title", None)
    return {**body, **({"$defs": schema["$defs"]} if schema["$defs"] else {})}


@cache
def screen_memory_status() -> Schema:
    from backscroll.contract import Refusal
    from backscroll.contract.screen_memory import ScreenMemoryStatus

    return _generated(ScreenMemoryStatus, Refusal)


@cache
def screen_memory_recent_context() -> Schema:
    from backscroll.contract import Refusal
    from backscroll.contract.screen_memory import RecentContext

    return _generated(RecentContext, Refusal)


@cache
def screen_memory_recent_segments() -> Schema:
    from backscroll.contract import Refusal
    from backscroll.contract.screen_memory import RecentStretches

    return _generated(RecentStretches, Refusal)


@cache
def kept_memory() -> Schema:
    from backscroll.contract.keep import (
        HistoryAnswer,
        KeepRefusal,
        KeptSearchAnswer,
        KeptStatus,
        MemoriesAnswer,
        Memory,
        ResolveAnswer,
    )

    return _generated(
        ResolveAnswer,
        KeptSearchAnswer,
        MemoriesAnswer,
        Memory,
        HistoryAnswer,
        KeptStatus,
        KeepRefusal,
    )


@cache
def kept_memory_write() -> Schema:
    from backscroll.contract.keep import ForgetAnswer, KeepAnswer, KeepRefusal

    return _generated(KeepAnswer, ForgetAnswer, KeepRefusal)


def output_schema(tool: str) -> Schema:
    """The ``outputSchema`` of ``tool``, one of the server's tools."""
    schemas = {
        "memory": memory,
        "screen_memory_status": screen_memory_status,
        "screen_memory_recent_context": screen_memory_recent_context,
        "screen_memory_recent_segments": screen_memory_recent_segments,
        "memory_manage": memory_manage,
        "kept_memory": kept_memory,
        "kept_memory_write": kept_memory_write,
    }
    return schemas[tool]()
