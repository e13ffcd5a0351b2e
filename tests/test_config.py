"""The config: validated, an event in the log, readable as config.json, hand edits taken in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backscroll.store import MemoryStore
from base.config import PRIVATE_BROWSING, Config, config_from_dict
from base.errors import ConfigError
from eventlog.events import ConfigChanged


def config_events(store: MemoryStore) -> list[ConfigChanged]:
    return [e for _, e in store.log.read() if isinstance(e, ConfigChanged)]


def test_missing_keys_take_their_defaults_and_old_files_get_private_browsing_once() -> None:
    old = config_from_dict({"deny_apps": ["Signal"], "config_version": 1, "retention_days": 7})
    assert old.retention_days == 7 and old.trigger == "events"
    assert old.deny_apps == ("Signal", *PRIVATE_BROWSING)
    again = config_from_dict(old.to_dict())
    assert again.deny_apps == old.deny_apps and again.config_version == 2


@pytest.mark.parametrize(
    "change",
    [
        {"poll_seconds": 0.1},
        {"retention_days": 0},
        {"storage_cap_mb": -5},
        {"trigger": "x"},
        {"ocr_backend": "magic"},
        {"thumbnail_quality": 200},
        {"announce_accessibility": "yes"},
        {"no_such_key": 1},
    ],
)
def test_invalid_values_are_refused_with_one_line(change: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as error:
        Config().replace(**change)
    assert "\n" not in str(error.value)


def test_config_json_is_a_readable_copy_rewritten_after_each_change(
    backscroll_home: Path,
) -> None:
    with MemoryStore(write=True) as store:
        store.set_config(retention_days=9)
        assert json.loads((backscroll_home / "config.json").read_text())["retention_days"] == 9
    with MemoryStore() as store:  # our own rewrite is not mistaken for a hand edit
        assert [e.origin for e in config_events(store)] == ["cli"]
    path = backscroll_home / "config.json"
    path.write_text(json.dumps(json.loads(path.read_text())))  # same values, new layout
    with MemoryStore() as store:
        assert [e.origin for e in config_events(store)] == ["cli"]


def test_a_hand_edit_becomes_an_event_and_a_bad_one_is_refused(backscroll_home: Path) -> None:
    with MemoryStore(write=True) as store:
        store.set_config(retention_days=9)
    path = backscroll_home / "config.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "retention_days": 3}))
    with MemoryStore(write=True) as store:
        assert store.config.retention_days == 3
        assert [e.origin for e in config_events(store)] == ["cli", "file"]
    path.write_text(json.dumps({**data, "poll_seconds": 0.01}))
    with MemoryStore(write=True) as store:
        assert store.config.retention_days == 3 and store.config.poll_seconds == 1.0
        assert "poll_seconds must be at least 0.2" in (store.config_problem or "")
        assert len(config_events(store)) == 2
    path.write_text("{broken")
    with MemoryStore() as store:
        assert "config.json edit refused" in (store.config_problem or "")
