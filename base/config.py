"""The capture configuration: every key of the spec's table, its default and its rules.

The log holds the truth (``ConfigChanged`` events carry the whole config); ``config.json`` in
the home is a readable copy rewritten after every change.
"""

from __future__ import annotations

import re
import sys
from typing import Annotated, Any, Literal

import msgspec

from base.errors import ConfigError, is_text

CONFIG_VERSION = 2

PASSWORD_MANAGERS = (
    "1Password",
    "Bitwarden",
    "KeePassXC",
    "Keychain Access",
    "LastPass",
    "Dashlane",
)
PRIVATE_BROWSING = ("Private Browsing", "Incognito", "InPrivate")
DEFAULT_DENY = (*PASSWORD_MANAGERS, *PRIVATE_BROWSING)

TRIGGERS = ("events", "interval")
OCR_BACKENDS = ("auto", "tesseract", "always")
# "auto" picks from the session (capture/backends.py); "x11" in a Wayland session records
# only XWayland windows, and ``status`` says so.
CAPTURE_BACKENDS = ("auto", "x11", "wlroots", "gnome")


def default_hotkey(platform: str = sys.platform) -> str:
    return "<cmd>+<shift>+<alt>+p" if platform == "darwin" else "<ctrl>+<shift>+<alt>+p"


MODIFIERS = {"ctrl", "shift", "alt", "cmd"}


def parse_hotkey(spec: str) -> tuple[frozenset[str], str]:
    """``'<ctrl>+<shift>+<alt>+p'`` → ({ctrl, shift, alt}, 'p'); raises ValueError."""
    parts = [p.strip().lower() for p in spec.split("+") if p.strip()]
    mods = {p.strip("<>") for p in parts if p.startswith("<")}
    keys = [p for p in parts if not p.startswith("<")]
    if len(keys) != 1 or len(keys[0]) != 1 or not mods <= MODIFIERS:
        raise ValueError(f"hotkey {spec!r} must be modifiers and one key, e.g. <ctrl>+<alt>+m")
    return frozenset(mods), keys[0]


DAY_SECONDS = 86_400.0
# 0.1 s: below it the "interval" would be a busy loop of full captures.
Seconds = Annotated[float, msgspec.Meta(ge=0.1, le=DAY_SECONDS)]


class Config(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Each field's range is declared where msgspec checks it (``config_from_dict``); the
    error names the field (NaN and infinity fall outside every range)."""

    trigger: Literal["events", "interval"] = "events"
    interval_seconds: Seconds = 30.0
    poll_seconds: Annotated[float, msgspec.Meta(ge=0.2, le=3600)] = 1.0
    min_interval_seconds: Annotated[float, msgspec.Meta(ge=0, le=DAY_SECONDS)] = 2.0
    ax_min_chars: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)] = 40
    ocr_backend: Literal["auto", "tesseract", "always"] = "auto"
    capture_backend: Literal["auto", "x11", "wlroots", "gnome"] = "auto"
    announce_accessibility: bool = True
    """While the daemon runs, tell apps an assistive technology is present (AT-SPI
    ``IsEnabled``), so that Firefox and Qt apps publish their text (README: Privacy)."""
    redact: bool = True
    encrypt_thumbnails: bool = True
    encrypt_text: bool = False
    meaning: bool = True
    """Search by meaning: the daemon, ``import`` and ``reindex`` embed frames, and a search
    fuses the words with what the frames were about (README: "Search by meaning")."""
    deny_apps: tuple[Annotated[str, msgspec.Meta(min_length=1, max_length=1024)], ...] = (
        DEFAULT_DENY
    )
    storage_cap_mb: Annotated[int, msgspec.Meta(ge=1, le=1 << 30)] = 2048
    retention_days: Annotated[int, msgspec.Meta(ge=1, le=36_500)] = 30
    thumbnail_width: Annotated[int, msgspec.Meta(ge=16, le=4096)] = 480
    thumbnail_quality: Annotated[int, msgspec.Meta(ge=1, le=95)] = 60
    dedupe_threshold: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.02
    pause_hotkey: Annotated[str, msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=default_hotkey
    )
    config_version: int = CONFIG_VERSION

    def __post_init__(self) -> None:
        if not all(p.strip() for p in self.deny_apps):
            raise msgspec.ValidationError("deny_apps entries must not be blank")
        if self.pause_hotkey:
            try:
                parse_hotkey(self.pause_hotkey)
            except ValueError as exc:
                raise msgspec.ValidationError(f"pause_hotkey: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data

    def replace(self, **changes: Any) -> Config:
        """A new config with ``changes`` applied and validated; raises ``ConfigError``."""
        return config_from_dict({**self.to_dict(), **changes})


def config_from_dict(data: dict[str, Any]) -> Config:
    """Validate ``data`` into a ``Config``; missing keys take their defaults.

    A file written before ``config_version`` 2 gets the private-browsing deny entries once.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"invalid config: a JSON object is needed, not {type(data).__name__}")
    data = dict(data)
    for key, value in data.items():
        values = value if isinstance(value, list | tuple) else [value]
        if any(isinstance(v, str) and not is_text(v) for v in values):
            raise ConfigError(f"invalid config: {key} is not UTF-8 text")
    version = data.get("config_version", 1)
    old = isinstance(version, int | float) and version < 2
    if old and isinstance(data.get("deny_apps"), list | tuple):
        present = {str(p).lower() for p in data["deny_apps"]}
        extra = [p for p in PRIVATE_BROWSING if p.lower() not in present]
        data["deny_apps"] = [*data["deny_apps"], *extra]
    data["config_version"] = CONFIG_VERSION
    try:
        return msgspec.convert(data, Config, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid config: {_explained(str(exc), data)}") from None


_RANGE = re.compile(r"Expected `\w+` (>=|<=|>|<) (\S+) - at `\$\.(\w+)`")
_WORDS = {">=": "at least", "<=": "at most", ">": "more than", "<": "less than"}


def _explained(message: str, data: dict[str, Any]) -> str:
    """msgspec's "Expected `float` >= 0.2 - at `$.poll_seconds`", said for a person."""
    m = _RANGE.fullmatch(message)
    if m is None:
        return message
    op, bound, key = m.groups()
    return f"{key} must be {_WORDS[op]} {float(bound):g}, not {data.get(key)!r}"


def weakened(before: Config, after: Config) -> tuple[str, ...]:
    """What ``after`` gives up of ``before``'s privacy, one line each (empty: nothing)."""
    out = [
        f"{label} turned off"
        for key, label in (
            ("redact", "redaction"),
            ("encrypt_text", "text encryption"),
            ("encrypt_thumbnails", "thumbnail encryption"),
        )
        if getattr(before, key) and not getattr(after, key)
    ]
    kept = {p.lower() for p in after.deny_apps}
    gone = [p for p in before.deny_apps if p.lower() not in kept]
    if gone:
        out.append("taken off the deny list: " + ", ".join(gone))
    if after.retention_days > before.retention_days:
        out.append(f"retention {before.retention_days} → {after.retention_days} days")
    return tuple(out)
