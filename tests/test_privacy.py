"""Encryption at rest, blind-token search, reindex, and deletion that leaves no residue."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from PIL import Image

from backscroll.housekeeping import housekeep
from backscroll.importer import import_frames
from backscroll.manage import delete, rebuild_views
from backscroll.reindex import reindex
from backscroll.store import MemoryStore
from base.clock import now_us
from tests.helpers import NOW, import_line
from tests.residue import files_containing, index_doc_freq, stray_segment_files


@pytest.fixture
def picture(tmp_path: Path) -> Path:
    path = tmp_path / "shot.png"
    Image.new("RGB", (64, 48), (200, 30, 30)).save(path)
    return path


def test_encrypted_text_is_unreadable_on_disk_yet_found_by_exact_word(
    backscroll_home: Path, picture: Path
) -> None:
    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=True)
        import_frames(
            store,
            [
                import_line(
                    1, "Terminal", "zsh", "connection zanzibarite refused by upstream", picture
                ),
                import_line(1, "Editor", "notes", "plain words about marmalade"),
            ],
        )
        assert [h.app for h in store.search("zanzibarite")] == ["Terminal"]
        assert store.search("zanzib*") == []  # no prefix search on encrypted text
        assert [h.app for h in store.search('"refused by upstream"')] == ["Terminal"]
        assert store.search('"upstream by"') == []  # phrase order re-checked after decryption
        hit = store.get(store.search("zanzibarite")[0].id)
        assert hit.encrypted and "zanzibarite" in (hit.text or "")
        assert store.thumbnail(hit)[:2] == b"\xff\xd8"
        st = store.stats()  # as in the spec's "Direct store access"
        assert (st.frames, st.apps, st.encrypted_text_frames) == (2, 2, 2)
        assert (st.thumbnails, st.encrypted_thumbnails) == (1, 1)
        assert sum(st.text_sources.values()) == 2 and st.key_store in ("keyring", "file")
        assert st.encrypt_text and st.encrypt_thumbnails and st.encryption_available
        assert st.oldest and st.newest and st.oldest <= st.newest <= datetime.now(UTC)
        assert 0 < st.thumb_bytes < st.total_bytes and st.db_bytes > 0
    for word in ("zanzibarite", "upstream"):
        assert files_containing(backscroll_home, word) == []
        assert index_doc_freq(backscroll_home, "text", word) == 0


def test_an_encrypted_frame_whose_blind_tokens_differ_in_length_is_found_by_each_word(
    backscroll_home: Path,
) -> None:
    # The index takes a frame's tokens as one string of hex words, cut every 12 bytes when
    # they are all 12 bytes long; a log written by other hands may hold other lengths.
    from eventlog.events import FrameCaptured

    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=True)
        crypto = store.ensure_crypto()
        with store.log.batch() as batch:
            frame_id = batch.next_offset
            batch.append(
                FrameCaptured(
                    ts_us=now_us(),
                    frame_id=frame_id,
                    captured_us=now_us(),
                    app="Mail",
                    title="inbox",
                    ciphertext=crypto.encrypt_text(frame_id, "invoice overdue"),
                    encrypted=True,
                    blind_tokens=(*crypto.blind_tokens("invoice overdue"), b"\x01" * 5),
                )
            )
        store.refresh()
        assert [h.id for h in store.search("invoice")] == [frame_id]
        assert [h.id for h in store.search("overdue")] == [frame_id]


def test_a_lost_key_reads_as_empty_text_and_no_image_and_search_keeps_working(
    backscroll_home: Path, picture: Path
) -> None:
    with MemoryStore(write=True) as store:
        import_frames(store, [import_line(1, "Editor", "notes", "visible nebula")])
        store.set_config(encrypt_text=True)
        import_frames(store, [import_line(1, "Terminal", "zsh quasar", "secretive words", picture)])
    (backscroll_home / "key").unlink()
    with MemoryStore() as store:
        assert [h.app for h in store.search("nebula")] == ["Editor"]
        assert [h.app for h in store.search("quasar")] == ["Terminal"]  # titles stay plaintext
        hit = store.search("quasar")[0]
        assert store.get(hit.id).text == "" and store.thumbnail(hit) is None


def test_reindex_encrypts_stored_plaintext_and_redacts_old_secrets(
    backscroll_home: Path, picture: Path
) -> None:
    with MemoryStore(write=True) as store:
        store.set_config(redact=False, encrypt_thumbnails=False)
        import_frames(
            store,
            [
                import_line(
                    1, "Terminal", "zsh", "export password=hunter2xyz9 then gravimetric", picture
                ),
            ],
        )
        assert files_containing(backscroll_home, "hunter2xyz9")
        store.set_config(redact=True, encrypt_text=True, encrypt_thumbnails=True)
        counts = reindex(store)
        assert counts["encrypted"] == 1 and counts["thumbnails_encrypted"] == 1
        assert [h.app for h in store.search("gravimetric")] == ["Terminal"]
        text = store.get(store.search("gravimetric")[0].id).text or ""
        assert "[REDACTED:password]" in text
    for word in ("hunter2xyz9", "gravimetric"):
        assert files_containing(backscroll_home, word) == []
    assert not list(backscroll_home.glob("thumbs/*/*.jpg"))
    assert list(backscroll_home.glob("thumbs/*/*.jpg.enc"))
    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=False)
        reindex(store)
        assert [h.encrypted for h in store.search("gravimetric")] == [False]


@pytest.mark.parametrize("scope", ["app", "before", "retention", "everything"])
def test_deleted_frames_leave_nothing_readable_and_never_come_back(
    backscroll_home: Path, picture: Path, scope: str
) -> None:
    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                import_line(40, "Slack", "general — quokkaroom", "obliviate tarantella", picture),
                import_line(
                    35, "Slack", "general — quokkaroom", "obliviate tarantella again", picture
                ),
                import_line(1, "Terminal", "zsh", "kept frame with pelican"),
            ],
        )
        if scope == "app":
            delete(store, app="slack")
        elif scope == "before":
            delete(store, end=NOW - timedelta(days=30))
        elif scope == "retention":
            with store.projector() as projector:
                housekeep(store, projector, store.config)
        else:
            delete(store)
        assert store.search("obliviate") == []
        assert store.search("quokkaroom") == []
        kept = store.search("pelican")
        assert len(kept) == (0 if scope == "everything" else 1)
    for word in ("obliviate", "tarantella", "quokkaroom"):
        assert files_containing(backscroll_home, word) == [], word
        for field in ("text", "where"):
            assert index_doc_freq(backscroll_home, field, word) == 0
    assert stray_segment_files(backscroll_home) == []
    assert not list(backscroll_home.glob("thumbs/*/*"))
    with MemoryStore(write=True) as store:
        rebuild_views(store)
        assert store.search("obliviate") == []
        log = [e for _, e in store.log.read() if type(e).__name__ == "FramesDeleted"]
        assert len(log) == 1


def test_frame_ids_never_restart_after_everything_is_cleared(backscroll_home: Path) -> None:
    with MemoryStore(write=True) as store:
        import_frames(store, [import_line(1, "A", "a", "one"), import_line(1, "B", "b", "two")])
        last = max(h.id for h in store.timeline())
        delete(store)
        import_frames(store, [import_line(0, "C", "c", "three")])
        assert store.timeline()[0].id > last


def test_tampered_and_moved_ciphertexts_are_reported_and_the_rest_keeps_working(
    backscroll_home: Path,
) -> None:
    import msgspec

    from eventlog.events import FrameCaptured

    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=True)
        import_frames(
            store,
            [
                import_line(1, "A", "first", "alpha words"),
                import_line(1, "B", "second", "bravo words"),
                import_line(1, "C", "third", "charlie words"),
            ],
        )
        ids = {h.app: h.id for h in store.timeline()}
        blobs = {}

        def meddle(offset: int, event: object) -> object:
            if not isinstance(event, FrameCaptured):
                return event
            blobs[event.app] = event.ciphertext
            if event.app == "A":  # one flipped byte
                flipped = bytes([event.ciphertext[-1] ^ 1])
                return msgspec.structs.replace(event, ciphertext=event.ciphertext[:-1] + flipped)
            if event.app == "B":  # A's ciphertext moved onto B
                return msgspec.structs.replace(event, ciphertext=blobs["A"])
            return event

        store.log.compact(meddle)
        rebuild_views(store)
        tampered, moved, intact = (store.get(ids[app]) for app in "ABC")
        assert tampered.text == "" and f"frame {ids['A']}" in (tampered.problem or "")
        assert moved.text == "" and moved.problem
        assert intact.text == "charlie words" and intact.problem is None
        assert [h.app for h in store.search("charlie")] == ["C"]
    (backscroll_home / "key").write_bytes(b"\x00" * 32)  # a different key in its place
    with MemoryStore() as store:
        hit = store.get(ids["C"])
        assert hit.text == "" and "not available" in (hit.problem or "")
        assert [h.app for h in store.search("third")] == ["C"]  # titles still search
        from backscroll.status import collect

        assert collect(store).key_problem


def test_the_storage_cap_deletes_oldest_first_down_to_ninety_percent(
    backscroll_home: Path, picture: Path
) -> None:
    from backscroll.housekeeping import _used_bytes

    with MemoryStore(write=True) as store:
        big = "filler " * 3000
        import_frames(
            store,
            [import_line(20 - i * 0.1, "App", f"t{i}", f"{big} n{i}", picture) for i in range(120)],
        )
        used = _used_bytes(store)
        cap_mb = max(1, int(used * 0.6 / 1_000_000))
        store.set_config(storage_cap_mb=cap_mb)
        with store.projector() as projector:
            housekeep(store, projector, store.config)
        assert _used_bytes(store) <= cap_mb * 1_000_000
        kept = sorted(h.id for h in store.timeline(limit=1000))
        assert kept and kept[-1] == max(kept) and len(kept) < 120
        assert store.search("n119") and not store.search("n0")  # the oldest went first
        reasons = [d.reason for d in store.state().deletions]
        assert reasons and set(reasons) == {"storage_cap"}


def test_the_first_encrypted_write_records_the_key_by_fingerprint(backscroll_home: Path) -> None:
    from backscroll.keys import key_status

    with MemoryStore(write=True) as store:
        store.set_config(encrypt_text=True)
        import_frames(store, [import_line(1, "A", "a", "one")])
        import_frames(store, [import_line(1, "B", "b", "two")])
        keys = [e for _, e in store.log.read() if type(e).__name__ == "KeyCreated"]
        assert [(k.store, k.fingerprint) for k in keys] == [
            ("file", key_status(backscroll_home).fingerprint)
        ]
        assert store.state().key_store == "file"


def test_a_damaged_purge_plan_after_the_log_was_compacted_still_purges_every_month(
    backscroll_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from projector.runner import Projector

    with MemoryStore(write=True) as store:
        import_frames(
            store,
            [
                import_line(40, "Slack", "general", "obliviate tarantella"),
                import_line(1, "Terminal", "zsh", "kept frame with pelican"),
            ],
        )
        real_rebuild = Projector.rebuild_months

        def crash(self: Projector, months: set[str]) -> None:
            raise SystemExit("power cut after the compaction, before the months are rebuilt")

        monkeypatch.setattr(Projector, "rebuild_months", crash)
        with pytest.raises(SystemExit):
            delete(store, app="slack")
        monkeypatch.setattr(Projector, "rebuild_months", real_rebuild)
    assert files_containing(backscroll_home / "log", "obliviate") == []  # compacted away
    assert index_doc_freq(backscroll_home, "text", "obliviate") == 1  # the index still has it
    (backscroll_home / "views" / "purge.json").write_bytes(b"\x00garbage")
    with MemoryStore() as store:  # a reader: the tombstone hides the frame, nothing is purged
        assert store.search("obliviate") == []
        assert len(store.search("pelican")) == 1
    assert index_doc_freq(backscroll_home, "text", "obliviate") == 1
    with MemoryStore(write=True) as store:  # the next writer finishes the purge
        assert store.search("obliviate") == []
        assert len(store.search("pelican")) == 1
    assert index_doc_freq(backscroll_home, "text", "obliviate") == 0
    assert not (backscroll_home / "views" / "purge.json").exists()
