"""What a kept memory's write must be before any store is opened: a refusal leaves nothing
behind (``backscroll.keep``; the CLI checks before it opens the store)."""

from __future__ import annotations

from typing import Any, NoReturn

from backscroll._keep_lines import frame_of
from backscroll.contract.keep import KeepRefusal, KeepRequest, ReviseRequest
from base.errors import UsageError

CLAIMED_KINDS = frozenset({"preference", "fact", "decision"})


class Refused(UsageError):
    """A write or read refused with one of the contract's codes (``KeepRefusal``)."""

    def __init__(self, refusal: KeepRefusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def refuse(error: Any, message: str, **details: Any) -> NoReturn:
    raise Refused(KeepRefusal(error=error, message=message, **details))


def checked(request: KeepRequest | ReviseRequest) -> bool:
    """Refuse a write that cannot be kept, before any store is opened (a refused command
    leaves nothing behind): a claim half given, a kind and a claim or due that do not go
    together, a time phrase that is none, a secret, a frame source that names no frame. For
    a keep, whether it has a claim."""
    if isinstance(request, ReviseRequest):
        if request.restore is not None and request.text is not None:
            refuse("invalid", "give text or restore, not both")
        for part in (request.text, request.value, request.source):
            if part is not None:
                no_secret(part)
        if request.source:
            check_source(request.source)
        for phrase in (request.due, request.valid_from, request.valid_until):
            when(phrase)
        return False
    claimed = request.subject is not None or request.predicate is not None
    if claimed and (request.subject is None or request.predicate is None):
        refuse("invalid", "a claim needs both subject and predicate")
    if not claimed and (request.context or request.value):
        refuse("invalid", "context and value belong to a claim: give subject and predicate")
    if claimed and request.kind not in CLAIMED_KINDS:
        refuse("invalid", f"an {request.kind} has no claim (only {', '.join(CLAIMED_KINDS)})")
    if (request.kind == "intention") != (request.due is not None):
        refuse("invalid", "an intention needs due, and only an intention has one")
    for phrase in (request.due, request.valid_from, request.valid_until):
        when(phrase)
    no_secret(request.text, request.value, request.subject, request.context, request.source)
    check_source(request.source)
    return claimed


def claim_of(space: str, subject: str, predicate: str, context: str) -> str:
    from projector.kept import claim_key

    return claim_key(space, subject, predicate, context)


def no_secret(*parts: str | None) -> None:
    from capture.redact import redact

    kinds: set[str] = set()
    for part in parts:
        if part:
            kinds.update(redact(part).counts)
    if kinds:
        found = ", ".join(sorted(kinds))
        refuse(
            "secret_detected",
            f"the write holds a secret ({found}); nothing was kept",
            kind=sorted(kinds),
        )


def check_source(source: str) -> None:
    if source.startswith("frame:") and frame_of(source) is None:
        refuse("invalid", "a frame source is frame:<id>, the id a search or timeline gives")


def when(phrase: str | None) -> int | None:
    """A due time: the start of what the phrase names, as ``--since`` reads it."""
    if phrase is None:
        return None
    from query.when import parse_when

    start, _ = parse_when(phrase)
    return int(start.timestamp() * 1_000_000)
