"""The capture configuration: every key of the spec's table, its default and its rules.

The log holds the truth (``ConfigChanged`` events carry the whole config); ``config.json`` in
the home is a readable copy rewritten after every change.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

import msgspec

from backscroll.errors import ConfigError

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


def default_hotkey(platform: str = sys.platform) -> str:
    return "<cmd>+<shift>+<alt>+p" if platform == "darwin" else "<ctrl>+<shift>+<alt>+p"


class Config(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    trigger: Literal["events", "interval"] = "events"
    interval_seconds: float = 30.0
    poll_seconds: float = 1.0
    min_interval_seconds: float = 2.0
    ax_min_chars: int = 40
    ocr_backend: Literal["auto", "tesseract", "always"] = "auto"
    redact: bool = True
    encrypt_thumbnails: bool = True
    encrypt_text: bool = False
    deny_apps: tuple[str, ...] = DEFAULT_DENY
    storage_cap_mb: int = 2048
    retention_days: int = 30
    thumbnail_width: int = 480
    thumbnail_quality: int = 60
    dedupe_threshold: float = 0.02
    pause_hotkey: str = msgspec.field(default_factory=default_hotkey)
    config_version: int = CONFIG_VERSION

    def __post_init__(self) -> None:
        checks = (
            (self.interval_seconds > 0, "interval_seconds must be positive"),
            (self.poll_seconds >= 0.2, "poll_seconds must be at least 0.2"),
            (self.min_interval_seconds >= 0, "min_interval_seconds must not be negative"),
            (self.ax_min_chars >= 0, "ax_min_chars must not be negative"),
            (self.storage_cap_mb > 0, "storage_cap_mb must be positive"),
            (self.retention_days > 0, "retention_days must be positive"),
            (16 <= self.thumbnail_width <= 4096, "thumbnail_width must be 16..4096"),
            (1 <= self.thumbnail_quality <= 95, "thumbnail_quality must be 1..95"),
            (0 <= self.dedupe_threshold <= 1, "dedupe_threshold must be 0..1"),
            (all(p.strip() for p in self.deny_apps), "deny_apps entries must not be empty"),
        )
        for ok, message in checks:
            if not ok:
                raise msgspec.ValidationError(message)

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
    data = dict(data)
    if int(data.get("config_version", 1) or 1) < 2 and "deny_apps" in data:
        present = {p.lower() for p in data["deny_apps"]}
        extra = [p for p in PRIVATE_BROWSING if p.lower() not in present]
        data["deny_apps"] = [*data["deny_apps"], *extra]
    data["config_version"] = CONFIG_VERSION
    try:
        return msgspec.convert(data, Config, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid config: {exc}") from None
