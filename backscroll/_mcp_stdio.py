"""A line on stdin that the SDK cannot read as a JSON-RPC message is answered, not dropped.

The SDK's stdio transport parses each line with pydantic; a line it refuses (a lone
surrogate ``\\ud800``, a 5,000-digit integer, 100,000-deep nesting, or not JSON at all) was
handed on as an exception, logged at debug level and dropped: the client waited for its
answer forever. ``Answering`` sits between the transport and the server and answers such a
line with a JSON-RPC error, under the request's own id when it can be found without parsing
the rest, as JSON-RPC asks (``null`` otherwise), then goes on serving.
"""

from __future__ import annotations

import re
from types import TracebackType
from typing import Any

from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from base import jsontext
from base.errors import is_text


class Answering:
    """The transport's read stream, less the lines it could not read: each is answered on
    ``replies`` (the transport's write stream) and the next message is read."""

    def __init__(self, messages: Any, replies: Any) -> None:
        self._messages = messages
        self._replies = replies

    @property
    def last_context(self) -> Any:
        # The SDK reads the sender's context from its stream this way, when there is one.
        return getattr(self._messages, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._messages.receive()
            if not isinstance(item, ValidationError):
                return item  # type: ignore[no-any-return]
            await self._replies.send(SessionMessage(unread(item)))

    async def aclose(self) -> None:
        await self._messages.aclose()

    def __aiter__(self) -> Answering:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        from anyio import EndOfStream

        try:
            return await self.receive()
        except EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Answering:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def unread(exc: ValidationError) -> JSONRPCError:
    """The error that answers a line the SDK refused, in one line."""
    problem = exc.errors()[0]
    line = problem.get("input")
    line = line if isinstance(line, str) else ""
    if problem["type"] == "json_invalid":
        code, why = PARSE_ERROR, _unreadable(line, problem["msg"])
    else:
        code, why = INVALID_REQUEST, "not a JSON-RPC 2.0 request, notification or response"
    return JSONRPCError(jsonrpc="2.0", id=request_id(line), error=ErrorData(code=code, message=why))


def _unreadable(line: str, pydantics: str) -> str:
    """Why the line is not JSON, in our words where they are clearer than pydantic's."""
    try:
        value = jsontext.parse(line)
    except ValueError as exc:
        return f"request {exc}"
    if not _all_text(value):
        return "request not read: a string holds a lone surrogate (\\ud800-\\udfff), not text"
    return f"request not read: {pydantics}"


def _all_text(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and not is_text(item):
            return False
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')
_NUMBER_ID = re.compile(r"\s*(-?\d{1,18})\s*[,}]")
_STRING_ID = re.compile(r'\s*("(?:[^"\\]|\\.)*")\s*[,}]')


def request_id(line: str) -> int | str | None:
    """The top-level ``"id"`` of a message that does not parse, read without parsing the
    rest (which may be nested past any parser's limit); None when there is none that can
    be given back as it was sent. Only the top level counts: a tool's arguments may hold an
    ``id`` of their own."""
    depth = 0
    before = ""
    for token in _TOKEN.finditer(line):
        text = token.group()
        if text in ("{", "["):
            if depth == 0 and text == "[":
                return None  # a batch: no one id to answer
            depth += 1
        elif text in ("}", "]"):
            depth -= 1
        elif text == ":" and depth == 1 and before == '"id"':
            return _id_at(line, token.end())
        before = text if depth == 1 else ""
    return None


def _id_at(line: str, at: int) -> int | str | None:
    number = _NUMBER_ID.match(line, at)
    if number:
        return int(number.group(1))
    string = _STRING_ID.match(line, at)
    if string:
        try:
            value = jsontext.parse(string.group(1))
        except ValueError:
            return None
        if isinstance(value, str) and is_text(value):
            return value
    return None
