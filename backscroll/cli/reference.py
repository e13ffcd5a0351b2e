"""The README's CLI reference, generated from the commands themselves and from the answer
contract's requests (a test keeps the README equal to this, so the two cannot drift):
``python -m backscroll.cli.reference``. The MCP tools' ``inputSchema`` come from the same
requests (``backscroll/mcp_schemas.py``)."""

from __future__ import annotations

from typing import Any

COMMON = {"--home", "--json", "--help"}
WIDTH = 96
# What a value looks like, where the option itself does not say.
METAVARS = {
    "since": "WHEN",
    "until": "WHEN",
    "before": "WHEN",
    "app": "TEXT",
    "limit": "N",
    "interval": "SECONDS",
    "poll": "SECONDS",
    "min_interval": "SECONDS",
    "redact": "on|off",
    "encrypt_text": "on|off",
    "encrypt_thumbnails": "on|off",
    "announce_accessibility": "on|off",
    "cap": "MB",
    "retention": "DAYS",
    "hotkey": "KEYS",
    "trigger": "events|interval",
    "backend": "auto|x11|wlroots|gnome",
    "log_file": "PATH",
    "save": "FILE",
    "out": "DIR",
    "format": "json|csv|html",
    "query": "QUERY",
    "kind": "KIND",
}


def _usage(name: str, command: Any) -> str:
    parts = [f"backscroll {name}"]
    for param in command.params:
        opts = [o for o in param.opts if o.startswith("--")] or param.opts
        if param.param_type_name == "argument":
            label = (param.metavar or param.name).strip("{}").upper()
            parts.append(label if param.required else f"[{label}]")
        elif opts[0] not in COMMON:
            if getattr(param, "is_flag", False):
                flags = [opts[0], *param.secondary_opts]
                parts.append(f"[{'/'.join(flags)}]")
            else:
                metavar = param.metavar or METAVARS.get(param.name, param.name.upper())
                parts.append(f"[{opts[0]} {metavar}]")
    return _wrap(parts)


def _wrap(parts: list[str], indent: int = 11) -> str:
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + 1 + len(part) > WIDTH:
            lines.append(" " * indent + part)
        else:
            lines[-1] += " " + part
    return "\n".join(lines)


def _summary(command: Any) -> str:
    return " ".join((command.help or "").split("\n\n")[0].split())


def reference() -> str:
    import typer.main

    from backscroll.cli.app import app

    root = typer.main.get_command(app)  # the commands in the order they are registered
    lines = []
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for sub_name, sub in subcommands.items():
                lines.append((_usage(f"{name} {sub_name}", sub), _summary(sub)))
        else:
            lines.append((_usage(name, command), _summary(command)))
    out = []
    for usage, help_text in lines:
        out.append(usage)
        out.append(f"    {help_text}")
    return "\n".join([*out, "", *arguments()])


def arguments() -> list[str]:
    """Each use case's arguments with their limits and defaults, as the CLI and the agent
    tools take them (``backscroll/contract/``)."""
    import msgspec

    from backscroll import contract

    requests = {
        "search": contract.SearchRequest,
        "timeline": contract.TimelineRequest,
        "show": contract.ShowRequest,
        "pause": contract.PauseRequest,
        "deny": contract.DenyRequest,
        "config": contract.ConfigRequest,
        "delete": contract.DeleteRequest,
        "export": contract.ExportRequest,
        "log": contract.LogRequest,
        "import": contract.ImportRequest,
        "reindex": contract.ReindexRequest,
        "summary": contract.SummaryRequest,
    }
    lines = ["Arguments of each use case, for the CLI and the agent tools (backscroll/contract/):"]
    for use, kind in requests.items():
        schema = msgspec.json.schema(kind)["$defs"][kind.__name__]
        required = set(schema.get("required", ()))
        for name, field in schema["properties"].items():
            words = [_kind(field), "required" if name in required else "optional"]
            if field.get("default") is not None:
                words.append(f"default {json_value(field['default'])}")
            head = f"{use} {name}: {', '.join(words)}."
            lines.append(_wrap([head, *field.get("description", "").split()], indent=4))
    return lines


def _kind(field: dict[str, Any]) -> str:
    """A field's JSON type and limits, in a few words."""
    kinds = [k for k in field.get("anyOf", [field]) if k.get("type") != "null"]
    shown = []
    for kind in kinds:
        if "enum" in kind:
            shown.append("|".join(str(v) for v in kind["enum"]))
        elif "minimum" in kind:
            shown.append(f"{kind['type']} {kind['minimum']}..{kind['maximum']}")
        elif kind.get("type") == "array":
            most = kind.get("maxItems")
            shown.append(f"list of at most {most}" if most is not None else "list")
        elif kind.get("pattern"):
            shown.append("text (not blank)")
        else:
            shown.append(kind.get("type", "any"))
    return " or ".join(shown)


def json_value(value: Any) -> str:
    import json

    return json.dumps(value)


if __name__ == "__main__":
    print(reference())
