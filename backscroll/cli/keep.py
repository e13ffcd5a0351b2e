"""``backscroll keep``: what a person or an agent decides to keep (``backscroll.keep``).

Every command takes ``--home`` and ``--json``. A refusal exits 1 with one line, or with
``--json`` prints the contract's ``KeepRefusal`` (``{"error": "version_conflict", …}``) and
exits 1; a claim not found is an answer (``{"found": false}``), exit 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from backscroll.cli._common import Home, Json, open_store
from backscroll.contract import keep_words as w

if TYPE_CHECKING:
    import msgspec

    from backscroll.contract.keep import MemoriesAnswer, Memory
    from backscroll.keep import Keeper

keep_app = typer.Typer(
    help="Memories you or your agents keep: preferences, facts, decisions, episodes, intentions.",
    no_args_is_help=True,
)

MemoryId = Annotated[str, typer.Argument(help=w.MEMORY_ID, show_default=False)]
Space = Annotated[str, typer.Option("--space", help=w.SPACE)]
SpaceFilter = Annotated[str | None, typer.Option("--space", help=w.SPACE, show_default=False)]
Key = Annotated[str | None, typer.Option("--key", help=w.REQUEST_KEY, show_default=False)]
Limit = Annotated[int, typer.Option("--limit", help=w.KEPT_LIMIT)]
Cursor = Annotated[str | None, typer.Option("--cursor", help=w.CURSOR, show_default=False)]
ValidFrom = Annotated[
    str | None, typer.Option("--valid-from", help=w.VALID_FROM, show_default=False)
]
ValidUntil = Annotated[
    str | None, typer.Option("--valid-until", help=w.VALID_UNTIL, show_default=False)
]
Expected = Annotated[
    int, typer.Option("--expected-version", help=w.EXPECTED_VERSION, show_default=False)
]


def register(app: typer.Typer) -> None:
    app.add_typer(keep_app, name="keep")


@keep_app.command("add")
def add(
    text: Annotated[str, typer.Argument(help=w.TEXT, show_default=False)],
    kind: Annotated[str, typer.Option("--kind", help=w.KIND)] = "fact",
    space: Space = "default",
    subject: Annotated[str | None, typer.Option(help=w.SUBJECT, show_default=False)] = None,
    predicate: Annotated[str | None, typer.Option(help=w.PREDICATE, show_default=False)] = None,
    context: Annotated[str, typer.Option(help=w.CONTEXT)] = "",
    value: Annotated[str, typer.Option(help=w.VALUE)] = "",
    due: Annotated[str | None, typer.Option(help=w.DUE, show_default=False)] = None,
    source: Annotated[str, typer.Option(help=w.SOURCE)] = "",
    valid_from: ValidFrom = None,
    valid_until: ValidUntil = None,
    key: Key = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """Keep a memory; answers it (and similar memories you may revise instead)."""
    from backscroll.contract.keep import KeepRequest
    from backscroll.keep import checked

    arguments = {
        "text": text,
        "kind": kind,
        "space": space,
        "subject": subject,
        "predicate": predicate,
        "context": context,
        "value": value,
        "due": due,
        "source": source,
        "valid_from": valid_from,
        "valid_until": valid_until,
        "request_key": key,
    }
    with _refusals(json):
        request = _ask(KeepRequest, arguments)
        checked(request)  # before the store opens: a refused write leaves nothing behind
        with _keeper(home, write=True) as keeper:
            kept = keeper.keep(request, "cli")
    lines = [_shown(kept.memory)]
    lines += [f"similar: {s.id} v{s.version} ({s.score:.2f}) {s.line}" for s in kept.similar]
    _reply(kept, "\n".join(lines), json)


@keep_app.command("list")
def list_(
    space: SpaceFilter = None,
    limit: Limit = 20,
    cursor: Cursor = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """Memories, newest first, a page at a time."""
    from backscroll.contract.keep import ListRequest

    request = {"space": space, "limit": limit, "cursor": cursor}
    with _refusals(json):
        request = _ask(ListRequest, request)
        with _keeper(home) as keeper:
            page = keeper.memories(request)
    _reply(page, _page(page), json)


@keep_app.command("show")
def show(memory_id: MemoryId, home: Home = None, json: Json = False) -> None:
    """One memory."""
    from backscroll.contract.keep import GetRequest

    with _refusals(json):
        request = _ask(GetRequest, {"id": memory_id})
        with _keeper(home) as keeper:
            memory = keeper.get(request)
    _reply(memory, _shown(memory), json)


@keep_app.command("history")
def history(memory_id: MemoryId, home: Home = None, json: Json = False) -> None:
    """Every version of a memory, oldest first."""
    from backscroll.contract.keep import HistoryRequest

    with _refusals(json):
        request = _ask(HistoryRequest, {"id": memory_id})
        with _keeper(home) as keeper:
            answer = keeper.history(request)
    text = "\n".join(
        f"v{v.version} {v.time:%Y-%m-%d %H:%M}"
        + (f" (restored v{v.restored_from})" if v.restored_from else "")
        + f"  {v.text}"
        for v in answer.versions
    )
    _reply(answer, text, json)


@keep_app.command("revise")
def revise(
    memory_id: MemoryId,
    text: Annotated[str, typer.Argument(help=w.TEXT, show_default=False)],
    expected_version: Expected,
    value: Annotated[str | None, typer.Option(help=w.VALUE, show_default=False)] = None,
    due: Annotated[str | None, typer.Option(help=w.DUE, show_default=False)] = None,
    source: Annotated[str | None, typer.Option(help=w.SOURCE, show_default=False)] = None,
    valid_from: ValidFrom = None,
    valid_until: ValidUntil = None,
    key: Key = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """A new version of a memory's text (and its claim's value, an intention's due)."""
    from backscroll.contract.keep import ReviseRequest
    from backscroll.keep import checked

    arguments = {
        "id": memory_id,
        "text": text,
        "expected_version": expected_version,
        "value": value,
        "due": due,
        "source": source,
        "valid_from": valid_from,
        "valid_until": valid_until,
        "request_key": key,
    }
    with _refusals(json):
        request = _ask(ReviseRequest, arguments)
        checked(request)  # before the store opens: a refused write leaves nothing behind
        with _keeper(home, write=True) as keeper:
            kept = keeper.revise(request, "cli")
    _reply(kept, _shown(kept.memory), json)


@keep_app.command("restore")
def restore(
    memory_id: MemoryId,
    version: Annotated[int, typer.Argument(help=w.RESTORE, show_default=False)],
    expected_version: Expected,
    key: Key = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """Restore an earlier version (from history): a new version with its text."""
    from backscroll.contract.keep import ReviseRequest
    from backscroll.keep import checked

    arguments = {
        "id": memory_id,
        "restore": version,
        "expected_version": expected_version,
        "request_key": key,
    }
    with _refusals(json):
        request = _ask(ReviseRequest, arguments)
        checked(request)  # before the store opens: a refused write leaves nothing behind
        with _keeper(home, write=True) as keeper:
            kept = keeper.revise(request, "cli")
    _reply(kept, _shown(kept.memory), json)


@keep_app.command("forget")
def forget(
    memory_id: MemoryId,
    expected_version: Annotated[
        int | None,
        typer.Option("--expected-version", help=w.EXPECTED_VERSION, show_default=False),
    ] = None,
    do_not_keep: Annotated[bool, typer.Option("--do-not-keep", help=w.DO_NOT_KEEP)] = False,
    key: Key = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """Forget a memory: erased from the log, a tombstone kept. Cannot be undone."""
    from backscroll.contract.keep import ForgetRequest

    arguments = {
        "id": memory_id,
        "expected_version": expected_version,
        "do_not_keep": do_not_keep,
        "request_key": key,
    }
    with _refusals(json):
        request = _ask(ForgetRequest, arguments)
        with _keeper(home, write=True) as keeper:
            gone = keeper.forget(request, "cli")
    _reply(gone, f"forgot {gone.id} (version {gone.version})", json)


@keep_app.command("resolve")
def resolve(
    subject: Annotated[str, typer.Option(help=w.SUBJECT, show_default=False)],
    predicate: Annotated[str, typer.Option(help=w.PREDICATE, show_default=False)],
    context: Annotated[str, typer.Option(help=w.CONTEXT)] = "",
    space: Annotated[str, typer.Option("--space", help=w.SPACES)] = "default",
    home: Home = None,
    json: Json = False,
) -> None:
    """The current memory of a claim, from the first space that holds it; never a guess."""
    from backscroll.contract.keep import ResolveRequest

    arguments = {
        "subject": subject,
        "predicate": predicate,
        "context": context,
        "spaces": _spaces(space),
    }
    with _refusals(json):
        request = _ask(ResolveRequest, arguments)
        with _keeper(home) as keeper:
            found = keeper.resolve(request)
    _reply(found, _shown(found.memory) if found.memory else "not found", json)


@keep_app.command("search")
def search(
    words: Annotated[str, typer.Argument(help=w.KEPT_QUERY, show_default=False)],
    space: Annotated[str | None, typer.Option("--space", help=w.SPACES)] = None,
    min_score: Annotated[float, typer.Option("--min-score", help=w.MIN_SCORE)] = 0.5,
    limit: Limit = 8,
    home: Home = None,
    json: Json = False,
) -> None:
    """Memories holding the words, best first; the closest below the cut-off otherwise."""
    from backscroll.contract.keep import KeptSearchRequest

    arguments = {
        "query": words,
        "spaces": _spaces(space) if space else [],
        "min_score": min_score,
        "limit": limit,
    }
    with _refusals(json):
        request = _ask(KeptSearchRequest, arguments)
        with _keeper(home) as keeper:
            found = keeper.search(request)
    lines = [f"{h.score:.2f} {_shown(h)}" for h in found.memories]
    lines += [f"near miss {h.score:.2f} {_shown(h)}" for h in found.near_misses]
    _reply(found, "\n".join(lines) or "no memory holds these words", json)


@keep_app.command("due")
def due(
    space: Annotated[str | None, typer.Option("--space", help=w.SPACES)] = None,
    limit: Limit = 20,
    cursor: Cursor = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """Intentions whose time has come, earliest first."""
    from backscroll.contract.keep import DueRequest

    arguments = {"spaces": _spaces(space) if space else [], "limit": limit, "cursor": cursor}
    with _refusals(json):
        request = _ask(DueRequest, arguments)
        with _keeper(home) as keeper:
            page = keeper.due(request)
    _reply(page, _page(page, "nothing is due"), json)


@keep_app.command("space")
def space(
    name: Annotated[str, typer.Argument(help=w.SPACE, show_default=False)],
    require_review: Annotated[
        bool | None,
        typer.Option("--require-review/--no-require-review", help=w.REQUIRE_REVIEW),
    ] = None,
    idle_days: Annotated[
        int | None, typer.Option("--idle-days", help=w.IDLE_DAYS, show_default=False)
    ] = None,
    keep_forever: Annotated[
        bool, typer.Option("--keep-forever", help="Turn idle expiry off.")
    ] = False,
    home: Home = None,
    json: Json = False,
) -> None:
    """A space's rules: review of writes, idle expiry."""
    from backscroll.contract.keep import SpaceRequest

    arguments = {
        "name": name,
        "require_review": require_review,
        "idle_days": idle_days,
        "keep_forever": keep_forever,
    }
    with _refusals(json):
        request = _ask(SpaceRequest, arguments)
        with _keeper(home, write=True) as keeper:
            rule = keeper.configure(request, "cli")
    review = "writes wait for review" if rule.require_review else "writes are kept at once"
    idle = (
        f"forgotten after {rule.idle_days} idle days" if rule.idle_days else "kept until forgotten"
    )
    _reply(rule, f"space {rule.name}: {review}; {idle}", json)


@keep_app.command("review")
def review(
    space: SpaceFilter = None,
    limit: Limit = 20,
    cursor: Cursor = None,
    home: Home = None,
    json: Json = False,
) -> None:
    """Memories waiting for your approval (approve or forget each)."""
    from backscroll.contract.keep import ReviewRequest

    arguments = {"space": space, "limit": limit, "cursor": cursor}
    with _refusals(json):
        request = _ask(ReviewRequest, arguments)
        with _keeper(home) as keeper:
            page = keeper.review(request)
    _reply(page, _page(page, "nothing waits for review"), json)


@keep_app.command("status")
def status(home: Home = None, json: Json = False) -> None:
    """Counts per space, the limits and the rules."""
    with _refusals(json), _keeper(home) as keeper:
        answer = keeper.status()
    lines = [
        f"{answer.memories:,} memories, {answer.proposed:,} waiting for review, "
        f"{answer.intentions_due:,} intentions due"
    ]
    for space in answer.spaces:
        review = "; writes wait for review" if space.require_review else ""
        idle = f"; forgotten after {space.idle_days} idle days" if space.idle_days else ""
        lines.append(
            f"  {space.name}: {space.memories:,} ({space.proposed:,} proposed){review}{idle}"
        )
    lines.append(answer.rules)
    _reply(answer, "\n".join(lines), json)


@keep_app.command("approve")
def approve(memory_id: MemoryId, home: Home = None, json: Json = False) -> None:
    """Approve a proposed memory: from now on it is served."""
    from backscroll.contract.keep import ApproveRequest

    with _refusals(json):
        request = _ask(ApproveRequest, {"id": memory_id})
        with _keeper(home, write=True) as keeper:
            kept = keeper.approve(request, "cli")
    _reply(kept, _shown(kept.memory), json)


# -- helpers ----------------------------------------------------------------------------------


@contextmanager
def _keeper(home: Path | None, *, write: bool = False) -> Iterator[Keeper]:
    from backscroll.keep import Keeper

    with open_store(home, write=write) as store:
        yield Keeper(store)


@contextmanager
def _refusals(json: bool) -> Iterator[None]:
    """With ``--json``, a refusal printed as the contract's object (exit 1)."""
    from backscroll.keep import Refused
    from base.errors import UsageError

    try:
        yield
    except UsageError as exc:
        if not json:
            raise
        from backscroll.contract import encode
        from backscroll.contract.keep import KeepRefusal

        refusal = exc.refusal if isinstance(exc, Refused) else None
        typer.echo(encode(refusal or KeepRefusal(error="invalid", message=str(exc))))
        raise typer.Exit(1) from None


def _ask(kind: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    from backscroll.contract import parse

    return parse(kind, arguments)  # type: ignore[arg-type]


def _spaces(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _shown(memory: Memory) -> str:
    return f"{memory.id} v{memory.version}  {memory.line}"


def _page(page: MemoriesAnswer, empty: str = "no memories") -> str:
    lines = [_shown(m) for m in page.memories]
    if page.next_cursor:
        lines.append(f"more: --cursor {page.next_cursor}")
    return "\n".join(lines) or empty


def _reply(answer: msgspec.Struct, text: str, json: bool) -> None:
    from backscroll.contract import encode

    typer.echo(encode(answer) if json else text)
