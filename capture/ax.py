"""The focused window's text, read from the accessibility tree over AT-SPI (Linux).

    text = window_text(frontmost.pid)          # "" when the app publishes nothing

How it is found, on the session's accessibility bus (dbus-fast, pure Python):

1. ``org.a11y.Bus.GetAddress`` on the session bus gives the accessibility bus address.
2. The registry (``org.a11y.atspi.Registry``, ``/org/a11y/atspi/accessible/root``) lists
   one child per application, as ``(unique bus name, root path)``. AT-SPI has no pid
   property: like libatspi's ``atspi_accessible_get_process_id`` we ask the bus daemon
   (``org.freedesktop.DBus.GetConnectionUnixProcessID``) which pid owns that bus name.
   Unique names are never reused on a bus, so the answers are cached.
3. The application's top-level children are its windows; the one in state ACTIVE is the
   focused one (else the first that is SHOWING).
4. In a browser or an Electron app the window holds a web document (role DOCUMENT_WEB):
   then the page is read, not the window, so the browser's own chrome (tab strip, toolbar
   buttons, address bar, infobars) is not frame text; ``window_page`` gives the page's
   address (the Document interface's ``DocURL`` attribute in Firefox, ``URI`` in Chromium).
5. Its text: one ``org.a11y.atspi.Collection.GetMatches`` call finds every SHOWING
   descendant with the Text interface (GTK, Firefox and Chromium implement Collection);
   Qt does not, so a bounded breadth-first walk does the same there. ``Text.GetText``
   then reads each one, and the names of tabs, buttons, list items, table cells, links
   and headings are added. Password fields (role PASSWORD_TEXT) are never read, neither
   their text nor their name.

The text includes the parts of a long document that are scrolled out of view (GTK);
Firefox and Chromium mark only what is on screen SHOWING, so a page gives its visible part.
Reads run on a private event loop in one daemon thread, reuse the bus connection, and stop
at ``timeout`` with what they have. On the test desktop a zenity --text-info window took
2.5 ms at the median and 9 ms at p90; an app without AT-SPI (xterm) 0.3 ms to say ""
(bench/results/capture.txt). Logs carry pids and error names, never text or titles.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from capture.probe import Geometry

if TYPE_CHECKING:
    from dbus_fast.aio import MessageBus

log = logging.getLogger(__name__)

REGISTRY = "org.a11y.atspi.Registry"
ROOT_PATH = "/org/a11y/atspi/accessible/root"
ACCESSIBLE = "org.a11y.atspi.Accessible"
COLLECTION = "org.a11y.atspi.Collection"
TEXT = "org.a11y.atspi.Text"
DOCUMENT = "org.a11y.atspi.Document"
COMPONENT = "org.a11y.atspi.Component"
# AtspiCoordType: coordinates on the screen (X11's root window), not the window's own.
COORDS_SCREEN = 0

# AtspiRole values (at-spi2-core atspi-constants.h).
ROLE_LINK = 88
ROLE_HEADING = 83
ROLE_LIST_ITEM = 32
ROLE_MENU_ITEM = 35
ROLE_PAGE_TAB = 37
ROLE_PASSWORD_TEXT = 40
ROLE_PUSH_BUTTON = 43
ROLE_TABLE_CELL = 56
ROLE_TREE_ITEM = 91
ROLE_DOCUMENT_WEB = 95
ROLE_COMBO_BOX = 11  # Firefox's address bar
ROLE_ENTRY = 79  # Chromium's
# Roles whose accessible *name* is visible text (a tab's title, a button's label) even when
# they have no Text interface.
NAMED_ROLES = (
    ROLE_PAGE_TAB,
    ROLE_PUSH_BUTTON,
    ROLE_LIST_ITEM,
    ROLE_TABLE_CELL,
    ROLE_TREE_ITEM,
    ROLE_LINK,
    ROLE_HEADING,
    ROLE_MENU_ITEM,
)
# AtspiStateType values.
STATE_ACTIVE = 1
STATE_SHOWING = 25
# AtspiCollectionMatchType / AtspiCollectionSortOrder.
MATCH_ALL, MATCH_ANY = 1, 2
SORT_CANONICAL = 1

# Bounds on one read: a window with more accessible objects than this is cut short (a
# GTK dialog has about 12, a large spreadsheet view thousands, mostly off-screen cells).
MAX_NODES = 2000
MAX_DEPTH = 40
# GetText calls in flight at once: enough to hide the bus round trip, few enough that
# reading stops soon after max_chars is reached.
BATCH = 32
# After finding no accessibility bus, don't look again for this long: each attempt costs
# a connection to the session bus.
RETRY_AFTER_S = 30.0
# A stretch of text whose box is taller than this many of its first character's is wrapped
# over several rows: its characters are then placed one by one, at most WRAPPED_CHARS of them
# (a box around the rows would black out the words beside it on every row).
WRAPPED_ROWS = 1.5
WRAPPED_CHARS = 4096

# The page addresses a frame keeps: web pages and local files. Other schemes are an app's
# own pages (an Electron app's ``vscode-file://``, a browser's ``chrome://newtab``).
URL_SCHEMES = ("http://", "https://", "file://")

_UNKNOWN = (
    "org.freedesktop.DBus.Error.UnknownMethod",
    "org.freedesktop.DBus.Error.UnknownInterface",
    "org.freedesktop.DBus.Error.UnknownObject",
)


class _Unavailable(Exception):
    """No accessibility bus to read from."""


class CallError(Exception):
    """A D-Bus call answered with an error (``name``), or not at all."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


Ref = tuple[str, str]  # (bus name, object path): one accessible object


class Page(NamedTuple):
    """What the daemon checks against the deny list before it grabs a window."""

    name: str
    """The focused window's accessible name: Chromium's says "(Incognito)" where its X
    title does not."""
    url: str


class AxPart(NamedTuple):
    """Where a stretch of ``AxText.text`` came from: an object's text, or its name."""

    start: int
    end: int
    ref: Ref
    named: bool
    """Its accessible name (a button's label): drawn somewhere in the object's extents."""
    lead: int
    """Characters stripped from the start of what the object gave."""
    objects: tuple[int, ...]
    """Where U+FFFC (an embedded object) stood in what the object gave, left out of the text."""

    def offset(self, at: int) -> int:
        """The object's own offset of the character at ``at`` in ``AxText.text``."""
        offset = self.lead + at - self.start
        for place in self.objects:
            if place <= offset:
                offset += 1
        return offset


class AxText(NamedTuple):
    """A window's text and, for each stretch of it, the object it came from (for
    ``AxReader.extents``)."""

    text: str
    parts: tuple[AxPart, ...] = ()


class AxWindow(NamedTuple):
    """A top-level window as AT-SPI tells it: no position, no size."""

    app: str  # the application's accessible name ("zenity", "Firefox")
    title: str  # the window's accessible name: its title
    pid: int  # 0 when the bus did not say
    ref: Ref
    active: bool  # in state ACTIVE: it has the focus


class AxReader:
    """Reads windows' text over AT-SPI; ``session_bus`` defaults to $DBUS_SESSION_BUS_ADDRESS."""

    def __init__(self, session_bus: str | None = None) -> None:
        self._session_bus = session_bus
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._bus: MessageBus | None = None
        self._pids: dict[str, int] = {}  # unique bus name → pid
        self._retry_at = 0.0
        self._lock = threading.Lock()

    def window_text(self, pid: int | None, *, max_chars: int = 20000, timeout: float = 1.0) -> str:
        """The focused window's text of the app with ``pid``, at most ``max_chars``."""
        return self.window_read(pid, max_chars=max_chars, timeout=timeout).text

    def window_read(
        self, pid: int | None, *, max_chars: int = 20000, timeout: float = 1.0
    ) -> AxText:
        """``window_text`` with the object each stretch of it came from."""
        if not pid or pid <= 0 or max_chars <= 0 or time.monotonic() < self._retry_at:
            return AxText("")
        parts: list[_Piece] = []
        self._run(f"pid {pid}", timeout, self._collect(pid, max_chars, parts))
        return _join(list(parts), max_chars)

    def extents(
        self, read: AxText, spans: Sequence[tuple[int, int]], *, timeout: float = 1.0
    ) -> list[Geometry] | None:
        """Where the stretches ``spans`` of ``read.text`` are drawn, in screen (root)
        coordinates: a box a row for text (``Text.GetRangeExtents``; a stretch wrapped over
        rows, a box a character), the object's box for a name. None when that could not be
        told for every stretch (the app went, or did not answer in ``timeout``)."""
        pieces: list[tuple[Ref, tuple[int, int] | None]] = []
        for start, end in spans:
            for part in read.parts:
                low, high = max(start, part.start), min(end, part.end)
                if low >= high:
                    continue
                if part.named:
                    pieces.append((part.ref, None))
                    continue
                while low < high:  # a row at a time: the object's own line breaks
                    brk = read.text.find("\n", low, high)
                    stop = high if brk < 0 else brk
                    if stop > low:
                        pieces.append((part.ref, (part.offset(low), part.offset(stop - 1) + 1)))
                    low = stop + 1
        if not pieces:
            return []
        found: list[Geometry] = []
        failed: list[str] = []
        self._run("the extents", timeout, self._extents(pieces, found, failed))
        if failed != [""]:  # "" alone: every piece placed
            log.debug("AT-SPI extents not found: %s", ", ".join(failed) or "timed out")
            return None
        return found

    def address_bar(self, pid: int | None, host: str, *, timeout: float = 1.0) -> list[Geometry]:
        """Where a browser's window of ``pid`` draws its page's address (screen coordinates):
        the entries of its toolbar (above the page) that show ``host``, else all of them, else
        the whole band above the page. Empty when it shows no page."""
        if not pid or pid <= 0 or time.monotonic() < self._retry_at:
            return []
        found: list[Geometry] = []
        self._run(f"pid {pid}", timeout, self._address_bar(pid, host, found))
        return found

    def windows(self, *, timeout: float = 1.0) -> list[AxWindow]:
        """Every accessible app's SHOWING top-level windows, the ACTIVE one first if any: on
        a desktop that tells programs nothing about windows (GNOME on Wayland), this is
        what is known of them. Empty when there is no accessibility bus."""
        if time.monotonic() < self._retry_at:
            return []
        found: list[AxWindow] = []
        self._run("the windows", timeout, self._windows(found))
        return sorted(found, key=lambda w: not w.active)

    def still_active(self, window: AxWindow, *, timeout: float = 1.0) -> AxWindow | None:
        """``window`` with its title now, if it is still the ACTIVE one (two calls, where
        ``windows`` makes some for every app)."""
        if time.monotonic() < self._retry_at:
            return None
        found: list[AxWindow] = []
        self._run("the active window", timeout, self._still_active(window, found))
        return found[0] if found else None

    def _run(self, what: str, timeout: float, reading: Coroutine[Any, Any, None]) -> None:
        """Run ``reading`` on the reader's loop for at most ``timeout`` seconds."""
        with self._lock:
            loop = self._start()
            work = asyncio.run_coroutine_threadsafe(self._bounded(what, timeout, reading), loop)
            try:
                # The coroutine stops itself at ``timeout``; the margin covers the hop.
                work.result(timeout + 0.5)
            except _Unavailable as exc:
                log.debug("no accessibility bus: %s", exc)
                self._retry_at = time.monotonic() + RETRY_AFTER_S
            except TimeoutError:
                work.cancel()
                log.debug("AT-SPI read of %s did not stop in time", what)
            except CallError as exc:  # the registry did not answer; the bus is fine
                log.debug("AT-SPI registry failed: %s", exc.name)
            except Exception as exc:  # the connection broke: reconnect on the next read
                log.debug("AT-SPI read of %s failed: %s", what, type(exc).__name__)
                with contextlib.suppress(Exception):
                    asyncio.run_coroutine_threadsafe(self._disconnect(), loop).result(1.0)

    def window_page(self, pid: int | None, *, timeout: float = 1.0) -> Page:
        """The focused window's accessible name and the address of the page it shows, of the
        app with ``pid``: "" for what it does not publish (not a browser), and for an
        address that is not a web or file address."""
        if not pid or pid <= 0 or time.monotonic() < self._retry_at:
            return Page("", "")
        found: list[Page] = []
        self._run(f"pid {pid}", timeout, self._page(pid, found))
        if not found:
            return Page("", "")
        name, url = found[0]
        return Page(name, url if url.lower().startswith(URL_SCHEMES) else "")

    def close(self) -> None:
        """Disconnect and stop the reader's thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._disconnect(), loop).result(1.0)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(2.0)
        loop.close()
        self._loop = self._thread = None

    # ------------------------------------------------------------------ loop

    def _start(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="backscroll-atspi", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    async def _disconnect(self) -> None:
        if self._bus is not None:
            self._bus.disconnect()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._bus.wait_for_disconnect(), 1.0)
        self._bus = None
        self._pids.clear()

    async def _connect(self) -> MessageBus:
        from dbus_fast.aio import MessageBus

        if self._bus is not None and self._bus.connected:
            return self._bus
        await self._disconnect()
        address = self._session_bus or os.environ.get("DBUS_SESSION_BUS_ADDRESS")
        if not address:
            raise _Unavailable("no session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
        try:
            session = await MessageBus(bus_address=address).connect()
        except Exception as exc:
            raise _Unavailable(f"session bus unreachable ({type(exc).__name__})") from None
        try:
            body = await call(
                session, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress"
            )
        except CallError as exc:
            raise _Unavailable(f"org.a11y.Bus does not answer ({exc.name})") from None
        finally:
            session.disconnect()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(session.wait_for_disconnect(), 1.0)
        try:
            self._bus = await MessageBus(bus_address=body[0]).connect()
        except Exception as exc:
            raise _Unavailable(f"accessibility bus unreachable ({type(exc).__name__})") from None
        return self._bus

    # ------------------------------------------------------------------ read

    async def _bounded(self, what: str, timeout: float, reading: Coroutine[Any, Any, None]) -> None:
        try:
            await asyncio.wait_for(reading, timeout)
        except TimeoutError:
            log.debug("AT-SPI read of %s stopped at %.2f s", what, timeout)

    async def _still_active(self, window: AxWindow, found: list[AxWindow]) -> None:
        bus = await self._connect()
        try:
            (state,) = await call(bus, *window.ref, ACCESSIBLE, "GetState")
            if _has_state(state, STATE_ACTIVE):
                found.append(window._replace(title=await _name(bus, window.ref)))
        except CallError as exc:  # closed since
            log.debug("AT-SPI window of %s is gone: %s", window.app, exc.name)

    async def _windows(self, found: list[AxWindow]) -> None:
        bus = await self._connect()
        apps = await self._apps(bus)

        async def windows_of(app: str) -> None:
            try:
                frames = await _window_states(bus, app)
                showing = [(r, s) for r, s in frames if _has_state(s, STATE_SHOWING)]
                if not showing:
                    return
                app_name = await _name(bus, (app, ROOT_PATH))
                titles = await asyncio.gather(*(_name(bus, ref) for ref, _s in showing))
            except CallError as exc:  # the app quit or hung up mid-read; the bus is fine
                log.debug("AT-SPI app %s failed: %s", app, exc.name)
                return
            for (ref, state), title in zip(showing, titles, strict=True):
                active = _has_state(state, STATE_ACTIVE)
                found.append(AxWindow(app_name, title, self._pids.get(app, 0), ref, active))

        await asyncio.gather(*(windows_of(app) for app in apps))

    async def _page(self, pid: int, found: list[Page]) -> None:
        async def read(bus: MessageBus, window: Ref) -> None:
            name = await _name(bus, window)
            try:
                document = await _document(bus, window)
            except CallError as exc:
                if exc.name not in _UNKNOWN:
                    raise
                document = None  # no Collection (Qt): no web document either
            found.append(Page(name, await _address(bus, document) if document else ""))

        await self._in_focused_window(pid, read)

    async def _extents(
        self,
        pieces: list[tuple[Ref, tuple[int, int] | None]],
        found: list[Geometry],
        failed: list[str],
    ) -> None:
        """Each piece's boxes into ``found``; into ``failed`` the names of the calls that
        failed, or "" alone once every piece is placed (a read cut short says neither).

        One round of calls: a name's object's extents; a stretch's range extents, and one
        character's of each object, whose height tells a stretch wrapped over rows. A
        character of a taller font than the stretch's can only make a wrapped stretch one
        box around its rows, painting more, never less."""
        bus = await self._connect()
        names = [ref for ref, span in pieces if span is None]
        texts = [(ref, span) for ref, span in pieces if span is not None]
        first: dict[Ref, int] = {}
        for ref, (start, _end) in texts:
            first.setdefault(ref, start)

        async def asked(ref: Ref, *request: Any) -> list[Any]:
            try:
                return await call(bus, *ref, *request)
            except CallError as exc:
                failed.append(exc.name)
                return []

        replies = await asyncio.gather(
            *(asked(ref, COMPONENT, "GetExtents", "u", [COORDS_SCREEN]) for ref in names),
            *(
                asked(ref, TEXT, "GetRangeExtents", "iiu", [*span, COORDS_SCREEN])
                for ref, span in texts
            ),
            *(
                asked(ref, TEXT, "GetCharacterExtents", "iu", [at, COORDS_SCREEN])
                for ref, at in first.items()
            ),
        )
        if failed:
            return
        named, ranged = replies[: len(names)], replies[len(names) : len(names) + len(texts)]
        chars = replies[len(names) + len(texts) :]
        heights = {ref: reply[3] for ref, reply in zip(first, chars, strict=True)}
        found.extend(Geometry(*reply[0]) for reply in named)
        wrapped = []
        for (ref, span), reply in zip(texts, ranged, strict=True):
            box = Geometry(*reply)
            if box.height <= WRAPPED_ROWS * heights[ref]:
                found.append(box)
            else:
                wrapped.append((ref, span))
        try:
            rows = await asyncio.gather(*(_rows(bus, ref, *span) for ref, span in wrapped))
        except CallError as exc:
            failed.append(exc.name)
            return
        found.extend(box for boxes in rows for box in boxes)
        failed.append("")

    async def _address_bar(self, pid: int, host: str, found: list[Geometry]) -> None:
        async def read(bus: MessageBus, window: Ref) -> None:
            document = await _document(bus, window)
            if document is None:
                return
            (page,) = await call(bus, *document, COMPONENT, "GetExtents", "u", [COORDS_SCREEN])
            page = Geometry(*page)
            (whole,) = await call(bus, *window, COMPONENT, "GetExtents", "u", [COORDS_SCREEN])
            whole = Geometry(*whole)
            entries = await _matches(
                bus,
                window,
                _rule(states=[STATE_SHOWING], roles=[ROLE_ENTRY, ROLE_COMBO_BOX]),
                count=64,
            )
            bars: list[tuple[Geometry, str]] = []
            for ref in entries:
                try:
                    (box,) = await call(bus, *ref, COMPONENT, "GetExtents", "u", [COORDS_SCREEN])
                    shown = (await call(bus, *ref, TEXT, "GetText", "ii", [0, -1]))[0]
                except CallError:
                    continue  # gone, or no text: not an address bar
                box = Geometry(*box)
                if box.width > 0 and box.height > 0 and box.y + box.height <= page.y:
                    bars.append((box, shown))
            showing = [box for box, shown in bars if host and host in shown.lower()]
            if showing or bars:
                found.extend(showing or [box for box, _ in bars])
            elif page.y > whole.y:
                # No entry said where: the toolbar is somewhere above the page.
                found.append(Geometry(whole.x, whole.y, whole.width, page.y - whole.y))

        await self._in_focused_window(pid, read)

    async def _collect(self, pid: int, max_chars: int, parts: list[_Piece]) -> None:
        async def read(bus: MessageBus, window: Ref) -> None:
            try:
                # A browser's page, not its chrome (tab strip, toolbar, address bar).
                root = await _document(bus, window) or window
                texts, names = await _collection_nodes(bus, root)
            except CallError as exc:
                if exc.name not in _UNKNOWN:
                    raise
                texts, names = await _walked_nodes(bus, window)
            await _read_texts(bus, texts, max_chars, parts)
            await _read_names(bus, names, max_chars, parts)

        await self._in_focused_window(pid, read)

    async def _in_focused_window(
        self, pid: int, read: Callable[[MessageBus, Ref], Awaitable[None]]
    ) -> None:
        """``read`` the focused window of the first of ``pid``'s accessible apps that has one."""
        bus = await self._connect()
        for app in await self._apps_of(bus, pid):
            try:
                window = await _focused_window(bus, app)
                if window is None:
                    continue
                await read(bus, window)
                return
            except CallError as exc:  # the app quit or hung up mid-read; the bus is fine
                log.debug("AT-SPI app of pid %d failed: %s", pid, exc.name)

    async def _apps_of(self, bus: MessageBus, pid: int) -> list[str]:
        """Bus names of the accessible applications run by ``pid``."""
        return [name for name in await self._apps(bus) if self._pids.get(name) == pid]

    async def _apps(self, bus: MessageBus) -> list[str]:
        """Bus names of the accessible applications; their pids are then in ``_pids``."""
        apps = [
            name
            for name, _path in (await call(bus, REGISTRY, ROOT_PATH, ACCESSIBLE, "GetChildren"))[0]
        ]
        unknown = [name for name in apps if name not in self._pids]
        owners = await asyncio.gather(*(_pid_of(bus, name) for name in unknown))
        self._pids.update(zip(unknown, owners, strict=True))
        for gone in set(self._pids) - set(apps):
            del self._pids[gone]
        return apps


async def call(
    bus: MessageBus,
    destination: str,
    path: str,
    interface: str,
    member: str,
    signature: str = "",
    body: Sequence[Any] = (),
) -> list[Any]:
    """One D-Bus method call on the connected ``bus``: its reply body, or ``CallError``."""
    from dbus_fast import Message, MessageType

    message = Message(
        destination=destination,
        path=path,
        interface=interface,
        member=member,
        signature=signature,
        body=list(body),
    )
    reply = await bus.call(message)
    if reply is None:
        raise CallError("no reply")
    if reply.message_type == MessageType.ERROR:
        raise CallError(reply.error_name or "error")
    return list(reply.body)


async def _pid_of(bus: MessageBus, name: str) -> int:
    try:
        body = await call(
            bus,
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "GetConnectionUnixProcessID",
            "s",
            [name],
        )
    except CallError:
        return 0  # gone since the registry listed it
    return int(body[0])


def _has_state(states: Sequence[int], state: int) -> bool:
    word, bit = divmod(state, 32)
    return len(states) > word and bool(states[word] >> bit & 1)


async def _window_states(bus: MessageBus, app: str) -> list[tuple[Ref, list[int]]]:
    """``app``'s top-level windows, each with its state set."""
    children = (await call(bus, app, ROOT_PATH, ACCESSIBLE, "GetChildren"))[0]
    states = await asyncio.gather(
        *(call(bus, name, path, ACCESSIBLE, "GetState") for name, path in children)
    )
    return [((name, path), state) for (name, path), (state,) in zip(children, states, strict=True)]


async def _focused_window(bus: MessageBus, app: str) -> Ref | None:
    windows = await _window_states(bus, app)
    for ref, state in windows:
        if _has_state(state, STATE_ACTIVE):
            return ref
    for ref, state in windows:
        if _has_state(state, STATE_SHOWING):
            return ref
    return None


async def _document(bus: MessageBus, window: Ref) -> Ref | None:
    """The web page shown in ``window`` (its first SHOWING DOCUMENT_WEB: in tree order the
    page comes before the frames it embeds), None when it shows none."""
    found = await _matches(
        bus, window, _rule(states=[STATE_SHOWING], roles=[ROLE_DOCUMENT_WEB]), count=1
    )
    return found[0] if found else None


async def _name(bus: MessageBus, ref: Ref) -> str:
    reply = await call(
        bus, *ref, "org.freedesktop.DBus.Properties", "Get", "ss", [ACCESSIBLE, "Name"]
    )
    value = reply[0].value
    return value.strip() if isinstance(value, str) else ""


async def _address(bus: MessageBus, page: Ref) -> str:
    """A web document's address: Firefox names the attribute ``DocURL``, Chromium ``URI``."""
    for name in ("DocURL", "URI"):
        try:
            value = (await call(bus, *page, DOCUMENT, "GetAttributeValue", "s", [name]))[0]
        except CallError:
            continue
        if isinstance(value, str) and value:
            return value.strip()
    return ""


def _bits(values: Iterable[int], words: int) -> list[int]:
    """A match rule's bit set, as the signed 32-bit words D-Bus ``ai`` carries."""
    out = [0] * words
    for value in values:
        out[value // 32] |= 1 << (value % 32)
    return [word - (1 << 32) if word >= 1 << 31 else word for word in out]


def _rule(
    *, states: Iterable[int] = (), roles: Iterable[int] = (), interfaces: Sequence[str] = ()
) -> list[Any]:
    """An AT-SPI match rule: every state, any of the roles, every interface."""
    return [
        _bits(states, 2),
        MATCH_ALL,
        {},
        MATCH_ALL,
        _bits(roles, 5),
        MATCH_ANY if roles else MATCH_ALL,
        list(interfaces),
        MATCH_ALL,
        False,
    ]


async def _matches(
    bus: MessageBus, window: Ref, rule: list[Any], count: int = MAX_NODES
) -> list[Ref]:
    body = await call(
        bus,
        window[0],
        window[1],
        COLLECTION,
        "GetMatches",
        "(aiia{ss}iaiiasib)uib",
        [rule, SORT_CANONICAL, count, True],
    )
    return [(name, path) for name, path in body[0]]


async def _collection_nodes(bus: MessageBus, window: Ref) -> tuple[list[Ref], list[Ref]]:
    """(objects with text, objects whose name is text) under ``window``, in tree order."""
    texts, names, secret = await asyncio.gather(
        # Collection interface names are at-spi2-atk's short names ("text"), not D-Bus ones.
        _matches(bus, window, _rule(states=[STATE_SHOWING], interfaces=["text"])),
        _matches(bus, window, _rule(states=[STATE_SHOWING], roles=NAMED_ROLES)),
        _matches(bus, window, _rule(roles=[ROLE_PASSWORD_TEXT])),
    )
    hidden = set(secret)
    text_refs = [ref for ref in texts if ref not in hidden]
    has_text = set(text_refs)
    return text_refs, [ref for ref in names if ref not in has_text]


async def _walked_nodes(bus: MessageBus, window: Ref) -> tuple[list[Ref], list[Ref]]:
    """The same as ``_collection_nodes`` by walking the tree, for toolkits without
    Collection; at most MAX_NODES objects, MAX_DEPTH levels."""
    texts: list[Ref] = []
    names: list[Ref] = []
    level = [window]
    seen = 0
    for _depth in range(MAX_DEPTH):
        if not level or seen >= MAX_NODES:
            break
        level = level[: MAX_NODES - seen]
        seen += len(level)
        described = await asyncio.gather(*(_describe(bus, ref) for ref in level))
        next_level: list[Ref] = []
        for ref, (role, states, interfaces, children) in zip(level, described, strict=True):
            if ref != window and not _has_state(states, STATE_SHOWING):
                continue  # a hidden tab's page: neither it nor its children are on screen
            if TEXT in interfaces and role != ROLE_PASSWORD_TEXT:
                texts.append(ref)
            elif role in NAMED_ROLES:
                names.append(ref)
            next_level.extend(children)
        level = next_level
    return texts, names


async def _describe(bus: MessageBus, ref: Ref) -> tuple[int, list[int], list[str], list[Ref]]:
    try:
        role, states, interfaces, children = await asyncio.gather(
            *(
                call(bus, ref[0], ref[1], ACCESSIBLE, member)
                for member in ("GetRole", "GetState", "GetInterfaces", "GetChildren")
            )
        )
    except CallError:
        return 0, [], [], []  # destroyed while we looked
    kids = [(name, path) for name, path in children[0]]
    return int(role[0]), list(states[0]), list(interfaces[0]), kids


async def _rows(bus: MessageBus, ref: Ref, start: int, end: int) -> list[Geometry]:
    """The boxes on screen of the characters ``start`` to ``end`` of ``ref``'s text, which
    the object wrapped over rows: one box a row."""
    chars = await asyncio.gather(
        *(
            call(bus, *ref, TEXT, "GetCharacterExtents", "iu", [at, COORDS_SCREEN])
            for at in range(start, min(end, start + WRAPPED_CHARS))
        )
    )
    rows: list[Geometry] = []
    for x, y, width, height in chars:
        if width <= 0 or height <= 0:
            continue
        if rows and rows[-1].y == y:
            last = rows[-1]
            left, right = min(last.x, x), max(last.x + last.width, x + width)
            rows[-1] = Geometry(left, y, right - left, max(last.height, height))
        else:
            rows.append(Geometry(x, y, width, height))
    return rows


_Piece = tuple[str, Ref, bool, int, tuple[int, ...]]
"""What ``_join`` joins: a text, its object, whether it is the object's name, and where it
stood in what the object gave (``AxPart.lead`` and ``AxPart.objects``)."""


async def _read_texts(
    bus: MessageBus, refs: list[Ref], max_chars: int, parts: list[_Piece]
) -> None:
    budget = max_chars
    for start in range(0, len(refs), BATCH):
        if budget <= 0:
            return
        batch = refs[start : start + BATCH]
        replies = await asyncio.gather(
            # -1: to the end. Firefox answers "" to an end offset past the text's length.
            *(call(bus, name, path, TEXT, "GetText", "ii", [0, -1]) for name, path in batch),
            return_exceptions=True,
        )
        for ref, reply in zip(batch, replies, strict=True):
            if isinstance(reply, BaseException):
                continue  # that object went away
            raw = reply[0][:budget]
            text = _clean(raw)
            if text:
                bare = raw.replace("\ufffc", "")
                objects = tuple(n for n, char in enumerate(raw) if char == "\ufffc")
                parts.append((text, ref, False, len(bare) - len(bare.lstrip()), objects))
                budget -= len(text) + 1


async def _read_names(
    bus: MessageBus, refs: list[Ref], max_chars: int, parts: list[_Piece]
) -> None:
    if not refs or sum(len(part[0]) + 1 for part in parts) >= max_chars:
        return
    replies = await asyncio.gather(
        *(
            call(
                bus,
                name,
                path,
                "org.freedesktop.DBus.Properties",
                "Get",
                "ss",
                [ACCESSIBLE, "Name"],
            )
            for name, path in refs[:MAX_NODES]
        ),
        return_exceptions=True,
    )
    for ref, reply in zip(refs, replies, strict=False):
        if not isinstance(reply, BaseException):
            name = _clean(reply[0].value)
            if name:
                parts.append((name, ref, True, 0, ()))


def _clean(text: str) -> str:
    # U+FFFC stands for an embedded child object (an image, a link in some toolkits).
    return text.replace("\ufffc", "").strip()


def _join(parts: list[_Piece], max_chars: int) -> AxText:
    """The parts in order, each once (a label's name repeats its text), cut at max_chars."""
    seen: set[str] = set()
    kept: list[str] = []
    placed: list[AxPart] = []
    at = 0
    for text, ref, named, lead, objects in parts:
        if text in seen or at >= max_chars:
            continue
        seen.add(text)
        kept.append(text)
        end = min(at + len(text), max_chars)
        placed.append(AxPart(at, end, ref, named, lead, objects))
        at += len(text) + 1
    return AxText("\n".join(kept)[:max_chars], tuple(placed))


STATUS = "org.a11y.Status"


def set_accessibility_enabled(
    enabled: bool, session_bus: str | None = None, *, timeout: float = 2.0
) -> bool | None:
    """Set ``org.a11y.Status.IsEnabled`` on the session's accessibility bus, as a screen
    reader does; returns its value before (None: no accessibility bus to tell).

    Apps that ask publish their tree only while it is true: Firefox (it follows a change at
    run time), Qt. GTK 3 publishes regardless; Chromium and Electron ignore it (they need
    ``--force-renderer-accessibility``; measured in bench/results/browsers.txt).
    """
    address = session_bus or os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    if not address:
        return None

    async def swap() -> bool | None:
        from dbus_fast import Variant
        from dbus_fast.aio import MessageBus

        bus = await MessageBus(bus_address=address).connect()
        try:
            props = ("org.a11y.Bus", "/org/a11y/bus", "org.freedesktop.DBus.Properties")
            try:
                before = await call(bus, *props, "Get", "ss", [STATUS, "IsEnabled"])
                if bool(before[0].value) != enabled:
                    await call(
                        bus, *props, "Set", "ssv", [STATUS, "IsEnabled", Variant("b", enabled)]
                    )
            except CallError as exc:
                log.debug("org.a11y.Status unavailable: %s", exc.name)
                return None
            return bool(before[0].value)
        finally:
            bus.disconnect()

    try:
        return asyncio.run(asyncio.wait_for(swap(), timeout))
    except Exception as exc:  # no session bus, or it hung up: nothing to announce to
        log.debug("could not reach the session bus: %s", type(exc).__name__)
        return None


_default: AxReader | None = None
_default_lock = threading.Lock()


def window_text(pid: int | None, *, max_chars: int = 20000, timeout: float = 1.0) -> str:
    """The focused window's text of the app with ``pid`` ("" without accessibility)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = AxReader()
            atexit.register(_default.close)
        reader = _default
    return reader.window_text(pid, max_chars=max_chars, timeout=timeout)
