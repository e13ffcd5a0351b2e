"""The day at a glance: ``backscroll summary``."""

from __future__ import annotations

from typing import Annotated

import typer

from backscroll.cli._common import App, Home, Json, Until, ask, note_lag, open_store, reply
from backscroll.contract.words import SUMMARY_LIMIT, SUMMARY_SINCE


def register(app: typer.Typer) -> None:
    app.command()(summary)


def summary(
    since: Annotated[str | None, typer.Option("--since", help=SUMMARY_SINCE)] = None,
    until: Until = None,
    app: App = None,
    limit: Annotated[int, typer.Option("--limit", help=SUMMARY_LIMIT)] = 15,
    home: Home = None,
    json: Json = False,
) -> None:
    """Time per app and per window or site (default: today), from frame times."""
    from backscroll import answer
    from backscroll.contract.summary import SummaryRequest

    request = ask(SummaryRequest, since=since, until=until, app=app, limit=limit)
    with open_store(home) as store:
        answered = answer.summary(store, request)
        note_lag(store)
    reply(answered.answer, answered.text, json)
