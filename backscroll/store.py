"""``MemoryStore``: one home's log, views, key and thumbnails, behind one object.

A store opens to read (``MemoryStore(home)``) or to write (``MemoryStore(home, write=True)``).

A reader writes nothing, ever: no umask change, no sweep of temporaries, no event, no lock,
no catch-up, no purge, so a store on a read-only mount (a backup, a snapshot) can be
searched, and reading never changes what a person keeps. It serves the views as their writer
last committed them, with the control events the log holds past them (a deletion, a pause, a
config change) applied in memory, so a tombstone hides its frames at once; ``lag`` says how
many events the views trail by and ``behind_why`` why.

A writer (the daemon, ``import``, every command that changes the store) takes in a hand edit
of config.json, then catches the views up (which runs a pending purge) before it answers.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from backscroll.heartbeat import read_heartbeat
from base import jsontext
from base.clock import now_us
from base.config import Config, config_from_dict, weakened
from base.errors import (
    BackscrollError,
    ConfigError,
    DecryptionError,
    DiskFullError,
    LockedError,
    is_disk_full,
)
from base.fs import ensure_dir, private_umask, sweep_temporaries, write_atomic
from base.home import Layout, resolve_home
from base.processes import pid_alive
from eventlog.contract import EventLog
from eventlog.events import (
    FRAME_TYPE,
    TYPE_CODES,
    ConfigChanged,
    Event,
    FrameCaptured,
    KeyCreated,
    Origin,
)
from eventlog.log import Log
from projector.state import State
from query.views import ViewReader

# What only a writer, a search or ``status`` uses is imported where it is used: a command
# loads what its answer needs (the views' writer, the search engine, the disk walk).
if TYPE_CHECKING:
    from pathlib import Path

    from backscroll.crypto import FrameCrypto
    from backscroll.stats import Stats
    from projector.runner import Progress, Projector
    from projector.vectors import MeaningView
    from query.meaning import Ask, By, Meaning
    from query.moments import Moments
    from query.search import Hit, Searcher

CONTROL_TYPES = frozenset(TYPE_CODES.values()) - {FRAME_TYPE}
CONFIG_TYPES = frozenset({TYPE_CODES[ConfigChanged]})
CONFIG_FILE = "config.json"
CONFIG_HASH = "config.sha256"


_MEANING_VIEWS: dict[Path, MeaningView] = {}


class ConfigEdit(NamedTuple):
    """config.json as read against its last known hash: ``data`` None when unchanged."""

    data: bytes | None = None
    config: Config | None = None
    problem: str | None = None


class MemoryStore:
    """A Backscroll store. Use as a context manager; every method is safe to call from any
    process while a daemon runs."""

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        *,
        write: bool = False,
        catch_up: bool = True,
    ):
        """``write``: open as a writer, which catches the views up first unless ``catch_up``
        is False (the daemon's projector thread and ``reindex`` do it themselves)."""
        self.home = resolve_home(home)
        self.layout = Layout(self.home)
        self.writes = write
        if write:
            private_umask()
            ensure_dir(self.layout.log)
            for folder in (self.home, self.layout.views):
                sweep_temporaries(folder)
        self.log: EventLog = Log(self.layout.log)
        self.views = ViewReader(self.home)
        self.lag = 0
        self.behind_why = ""
        """Why the views trail the log by ``lag`` events (a daemon catching up, a full disk)."""
        self._crypto: FrameCrypto | None = None
        self._crypto_read = self._crypto_ensured = False
        self._meaning_view: Meaning | None = None
        self.ask_meaning: Ask | None = None
        """Asked for a search's frames by meaning before the model is loaded here (a
        command: the daemon, ``backscroll.meaning_socket``); set before the first search."""
        self.config_problem: str | None = None
        """A hand edit of config.json that is refused, or not taken in yet."""
        if not write:
            self._read_as_they_are(self._why_behind())
            self.config_problem = self._config_edit().problem
            return
        self.take_config_edit()
        if catch_up:
            self.refresh()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing stays open between calls; kept for the context-manager contract."""

    # -- views -----------------------------------------------------------------------------

    def projector(self) -> Projector:
        """The views' writer; raises LockedError while another process (the daemon) has it."""
        self._writer("write the views")
        from projector.runner import Projector

        return Projector(self.home, self.log, self._text_of, self._meaning_key)

    def _meaning_key(self) -> tuple[FrameCrypto | None, bool]:
        """The meaning view's cipher, and whether its new files are sealed: as frames' text is."""
        crypto = self.crypto
        return crypto, crypto is not None and self.config.encrypt_text

    def _text_of(self, frame: FrameCaptured) -> str | None:
        """A frame's text for the meaning view: decrypted where it is encrypted (None where
        the key is not available or it does not open)."""
        if not frame.encrypted:
            return frame.text
        crypto = self.crypto
        if crypto is None:
            return None
        try:
            return crypto.decrypt_text(frame.frame_id, frame.ciphertext)
        except DecryptionError:
            return None

    def refresh(self, progress: Progress | None = None) -> None:
        """Catch the views up with the log, unless another process is doing so."""
        self._writer("catch the views up")
        try:
            with self.projector() as projector:
                projector.catch_up(progress)
                self.lag = 0
        except LockedError:
            self._read_as_they_are("the daemon is catching up")
        except (DiskFullError, OSError, ValueError) as exc:
            # Reading never waits on writing: with no room to catch the views up, serve what
            # they hold and say how far behind they are.
            if not is_disk_full(exc) and not isinstance(exc, DiskFullError):
                raise
            self._read_as_they_are("the disk is full: they catch up once there is room")

    def reread(self) -> None:
        """A reader that stays open (the view's server) reads the log's end again: what the
        views trail it by, and the control events past them, as a reader opened now would."""
        self._read_as_they_are(self._why_behind())

    def embed(self, progress: Progress | None = None) -> int:
        """Catch the meaning view up with the words view (``import``, ``reindex``), unless the
        config turns it off, its model is not installed or another process holds the views
        (the daemon embeds in the background). Returns the frames embedded; Ctrl-C keeps the
        batches done, and the daemon resumes from there."""
        self._writer("embed frames")
        from projector import embedder

        if not self.config.meaning or not embedder.available():
            return 0
        try:
            with self.projector() as projector:
                return projector.embed_all(embedder.embedder(), progress)
        except LockedError:
            return 0

    def _read_as_they_are(self, why: str) -> None:
        state = self.views.state()
        if self.log.mark() == state.log_mark:
            self.lag = 0
        else:
            self.lag = max(0, self.log.next_offset() - 1 - state.position)
        if self.lag:
            self.views.controls = list(self.log.read(state.position + 1, types=CONTROL_TYPES))
        self.behind_why = why if self.lag else ""

    def _why_behind(self) -> str:
        beat = read_heartbeat(self.home)
        if beat is not None and pid_alive(beat.pid):
            return "the daemon is catching up"
        return "no daemon is running: the next command that changes the store catches them up"

    def _writer(self, doing: str) -> None:
        if not self.writes:
            # A caller's mistake, not a person's: no BackscrollError, which reads as one.
            raise RuntimeError(f"cannot {doing}: the store was opened to read, not write=True")

    def state(self) -> State:
        return self.views.state()

    @property
    def config(self) -> Config:
        data = self.state().config
        return config_from_dict(data) if data else Config()

    # -- reading ---------------------------------------------------------------------------

    @property
    def crypto(self) -> FrameCrypto | None:
        """The frame cipher, or None when no key exists (or it cannot be reached)."""
        if not self._crypto_read:
            self._crypto, self._crypto_read = self._existing_crypto(), True
        return self._crypto

    def _existing_crypto(self) -> FrameCrypto | None:
        from backscroll import keys

        try:
            key = keys.load_key(self.home, create=False)
        except BackscrollError:
            return None
        if key is None:
            return None
        from backscroll.crypto import FrameCrypto

        return FrameCrypto(key)

    def ensure_crypto(self) -> FrameCrypto | None:
        """The frame cipher for an encrypted write, creating the key on the first one (its
        fingerprint, never the key, goes into a ``KeyCreated`` event: the audit trail of
        which key encrypts what). None where encryption is unavailable on this machine."""
        if self._crypto_ensured:
            return self._crypto
        self._writer("create a key")
        from backscroll import keys

        if not keys.ENCRYPTION_AVAILABLE:
            return None
        from backscroll.crypto import FrameCrypto

        key = keys.load_key(self.home, create=True)
        assert key is not None
        fingerprint = keys.fingerprint(key)
        if self.state().key_fingerprint != fingerprint:
            status = keys.key_status(self.home)
            self.append(
                KeyCreated(ts_us=now_us(), store=status.store or "", fingerprint=fingerprint)
            )
        self._crypto, self._crypto_read = FrameCrypto(key), True
        self._crypto_ensured = True
        return self._crypto

    def searcher(self) -> Searcher:
        from query.search import Searcher

        # With no frame's text encrypted (the default config encrypts only thumbnails), a
        # search needs no key: the key store is not asked (for the keyring: its import,
        # ~50 ms, and a call to the Secret Service, on every search).
        crypto = self.crypto if self.state().totals().encrypted_text else None
        meaning = self._meaning(crypto)
        if crypto is None:
            return Searcher(self.views, meaning=meaning)
        return Searcher(self.views, crypto.decrypt_text, crypto.blind_token, meaning)

    def _meaning(self, crypto: FrameCrypto | None) -> Meaning | None:
        """Search by meaning, kept with its loaded months (a long-lived reader: the MCP
        server); None where the config turns it off or its model is not installed."""
        from projector import embedder

        if not self.config.meaning or not embedder.available():
            return None
        if self._meaning_view is None:
            from projector.vectors import MeaningView
            from query.meaning import Meaning

            root = self.layout.views / "meaning"
            # One per home and process: an agent's server opens a store for each call, and
            # the months it has read stay loaded (the model is the process's already).
            view = _MEANING_VIEWS.get(root)
            if view is None:
                view = _MEANING_VIEWS[root] = MeaningView(root, crypto)
            view.cipher = crypto
            self._meaning_view = Meaning(view, ask=self.ask_meaning)
        return self._meaning_view

    def search(
        self,
        query: str,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        app: str | None = None,
        limit: int = 15,
        fuzzy: bool = True,
        by: By = "both",
    ) -> list[Hit]:
        """Best first, the words fused with the meaning (``by``: one alone); ``fuzzy=False``
        never lets a word match one edit away (``Hit.fuzzy``) when no frame has every term
        exactly."""
        from query.search import TimeSpan

        searcher = self.searcher()
        return searcher.search(query, TimeSpan(start, end), app, limit, fuzzy=fuzzy, by=by)

    def moments(
        self,
        query: str,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        app: str | None = None,
        limit: int = 15,
        upto_id: int | None = None,
        by: By = "both",
    ) -> Moments:
        """``search``, near-duplicate frames of one window grouped: ``limit`` moments, or
        fewer with ``Moments.incomplete`` saying why where more frames matched. ``upto_id``:
        only frames up to that id (a snapshot, ``snapshot_id``)."""
        from query.moments import search_moments
        from query.search import TimeSpan

        span = TimeSpan(start, end, upto_id)
        return search_moments(self.searcher(), query, span, app, limit, by)

    def snapshot_id(self) -> int:
        """The last frame id the search view has committed (-1: none): every frame up to it
        is searchable now, and every frame recorded later has a larger id."""
        manifest = self.views.manifest()
        return manifest.position if manifest is not None else -1

    def timeline(
        self,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        app: str | None = None,
        limit: int = 50,
        past: tuple[int, int] | None = None,
    ) -> list[Hit]:
        """``past``: a frame's ``(capture µs, id)``; only the frames past it in the
        timeline's order (``Searcher.timeline``)."""
        from query.search import TimeSpan

        return self.searcher().timeline(TimeSpan(start, end), app, limit, past)

    def get(self, frame_id: int) -> Hit:
        return self.searcher().get(frame_id)

    def stats(self) -> Stats:
        """Counts, span, disk use, text sources and encryption, as ``status`` shows them."""
        from backscroll.stats import measure

        return measure(self.state(), self.config, self.layout)

    def thumbnail(self, frame: Hit | int) -> bytes | None:
        """The frame's JPEG, decrypted; None when it has none or the key is lost."""
        hit = self.get(frame) if isinstance(frame, int) else frame
        if not hit.thumb:
            return None
        try:
            data = (self.home / hit.thumb).read_bytes()
        except FileNotFoundError:
            return None
        if not hit.thumb_encrypted:
            return data
        if self.crypto is None:
            hit.problem = f"frame {hit.id}: the encryption key is not available"
            return None
        from base.errors import DecryptionError

        try:
            return self.crypto.decrypt_thumb(hit.id, data)
        except DecryptionError as exc:
            hit.problem = str(exc)
            return None

    # -- appending control events ----------------------------------------------------------

    def append(self, event: Event) -> int:
        self._writer("append to the log")
        offset = self.log.append(event)
        self.refresh()
        return offset

    def set_config(self, origin: Origin = "cli", **changes: Any) -> Config:
        """Validate and record a config change; nothing changes when a value is invalid."""
        # A value invalid in any config is refused before the log is locked (which makes
        # its lock file): a refused command leaves nothing behind.
        self.config.replace(**changes)
        return self.change_config(origin, lambda config: config.replace(**changes))

    def change_config(self, origin: Origin, change: Callable[[Config], Config]) -> Config:
        """Record ``change`` applied to the config as the log holds it now.

        The read, the append and the rewrite of config.json happen under the log's lock:
        a change computed from a config read before another process appended its own wrote
        that one over (six ``deny add`` at once kept two to four patterns), and config.json
        with its hash rewritten by two processes at once could pair one's file with the
        other's hash, which the next writer took for a hand edit.
        """
        self._writer("change the config")
        with self.log.locked():
            self.take_config_edit()
            before = self._config_in_log()
            config = change(before)
            self.log.append(
                ConfigChanged(
                    ts_us=now_us(),
                    config=config.to_dict(),
                    origin=origin,
                    weakened=weakened(before, config),
                )
            )
            self.write_config_file(config)
        self.refresh()
        return config

    def _config_in_log(self) -> Config:
        """The config with every change in the log, the views caught up with it or not."""
        state = self.views.state()
        for offset, event in self.log.read(state.position + 1, types=CONFIG_TYPES):
            state.apply(offset, event)
        return config_from_dict(state.config) if state.config else Config()

    def write_config_file(self, config: Config) -> None:
        self._writer("write config.json")
        data = (json.dumps(config.to_dict(), indent=2) + "\n").encode()
        write_atomic(self.home / CONFIG_FILE, data)
        write_atomic(self.home / CONFIG_HASH, hashlib.sha256(data).hexdigest().encode())

    def take_config_edit(self) -> None:
        """A hand edit of config.json becomes a ConfigChanged event (origin "file"), taken in
        before anything rewrites the file; an invalid edit is refused and reported."""
        self._writer("take in a config.json edit")
        edit = self._config_edit()
        if edit.data is not None and not edit.problem:
            # Read again under the log's lock: one read while another writer rewrote the
            # file and its hash looks like a hand edit, whose config, appended, would undo
            # the changes made since.
            with self.log.locked():
                edit = self._config_edit()
                if edit.data is not None and not edit.problem:
                    self.config_problem = self._take_in(edit.data, edit.config)
                    return
        self.config_problem = edit.problem

    def _take_in(self, data: bytes, config: Config | None) -> str | None:
        """Append the edit's config unless it is the config already; None, or why not yet."""
        before = self._config_in_log()
        try:
            if config is not None and config != before:
                # (Equal: a reformatting.)
                self.log.append(
                    ConfigChanged(
                        ts_us=now_us(),
                        config=config.to_dict(),
                        origin="file",
                        weakened=weakened(before, config),
                    )
                )
            write_atomic(self.home / CONFIG_HASH, hashlib.sha256(data).hexdigest().encode())
        except DiskFullError as exc:
            return f"config.json edit not taken in yet: {exc}"
        return None

    def _config_edit(self) -> ConfigEdit:
        """What config.json holds that its last known hash does not: nothing, a valid edit,
        or one that is refused. Only reads."""
        try:
            data = (self.home / CONFIG_FILE).read_bytes()
        except FileNotFoundError:
            return ConfigEdit()
        try:
            known = (self.home / CONFIG_HASH).read_text()
        except FileNotFoundError:
            known = ""
        if hashlib.sha256(data).hexdigest() == known:
            return ConfigEdit()
        try:
            edit = jsontext.parse(data)
            if edit == {}:
                raise ConfigError("it holds no settings")
            config = config_from_dict(edit)
        except (ValueError, ConfigError) as exc:
            reason = str(exc).removeprefix("invalid config: ")
            problem = f"config.json edit refused ({reason}); the previous config stays"
            return ConfigEdit(data, problem=problem)
        if self.writes or config == self.config:
            return ConfigEdit(data, config)
        return ConfigEdit(
            data,
            config,
            "config.json edited by hand: taken in by the daemon or the next command that "
            "changes the store",
        )

    def why_empty(
        self, start: datetime | None, end: datetime | None, app: str | None
    ) -> str | None:
        from query.explain import why_empty

        return why_empty(self.state(), self.config, start, end, app, now_us())
