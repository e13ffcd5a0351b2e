"""How GNOME gives Backscroll its pixels: four ways, one desktop, one run.

    cd /work/main && .venv/bin/python -m bench.gnome_pixels [--frames 20] [--busy 10]

On the headless GNOME Shell of ``headless.gnome`` (a zenity window of prose in
front), each way takes ``--frames`` frames of the whole desktop:

- **screencast, a frame a grab** (what ``capture.gnome`` does): one Mutter ScreenCast
  session kept; each grab connects GStreamer's ``pipewiresrc`` to its PipeWire stream,
  takes the first frame Mutter renders for it, and disconnects;
- **screencast, streaming**: the same pipeline kept playing (at most 2 frames a second, the
  caps' ``max-framerate``), a grab takes its last frame. A grab is cheaper, but Mutter
  renders and PipeWire carries every frame of a changing screen whether or not anybody
  grabs: measured over ``--busy`` seconds of a terminal printing the time;
- **gst-launch-1.0, a process a grab**: the same stream read by a new ``gst-launch-1.0``
  each time (no PyGObject);
- **the Screenshot portal** (``org.freedesktop.portal.Screenshot``, not interactive, with
  the permission-store grant a person gives once): GNOME Shell writes a PNG file a frame,
  read and deleted here. It runs as the desktop's user with Debian's python3-gi: the portal
  refuses a caller it cannot identify (root reading another user's desktop).

Per way: wall time a frame (p50, p90); CPU a frame in the caller, and in the desktop's
processes (gnome-shell, PipeWire, WirePlumber, the portals). Writes
``bench/results/gnome_pixels.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._corpus import cpu_model
from bench._proc import live_cpu_seconds
from bench._stats import load_average, percentile
from headless import GnomeDesktop, gnome_desktop
from headless.processes import stop_group

REPO = Path(__file__).resolve().parent.parent
STORE = "org.freedesktop.impl.portal.PermissionStore"
STORE_PATH = "/org/freedesktop/impl/portal/PermissionStore"
DESKTOP = ("gnome-shell", "pipewire", "wireplumber", "xdg-desktop-portal", "xdg-permission-store")
RESULTS = REPO / "bench" / "results" / "gnome_pixels.txt"
PROSE = "The quarterly invoice from Acme Corporation totals 4,200 euros, due Friday.\n" * 20

# Run as the desktop's user by Debian's python3: ``frames`` non-interactive screenshots,
# each PNG read and deleted; prints one JSON line of (wall s, CPU s) a frame.
_PORTAL_SCRIPT = """
import json, os, sys, time
from urllib.parse import unquote, urlparse
from gi.repository import Gio, GLib
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
loop = GLib.MainLoop()
frames = []
for i in range(int(sys.argv[1])):
    token = "bench%d_%d" % (i, os.getpid())
    request = "/org/freedesktop/portal/desktop/request/%s/%s" % (
        bus.get_unique_name()[1:].replace(".", "_"), token)
    answer = {}
    def on_response(conn, sender, path, iface, signal, params):
        answer["code"], answer["results"] = params.unpack()
        loop.quit()
    sub = bus.signal_subscribe(None, "org.freedesktop.portal.Request", "Response", request,
                               None, 0, on_response)
    wall, cpu = time.monotonic(), time.process_time()
    bus.call_sync("org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop",
                  "org.freedesktop.portal.Screenshot", "Screenshot",
                  GLib.Variant("(sa{sv})", ("", {"handle_token": GLib.Variant("s", token),
                                                 "interactive": GLib.Variant("b", False)})),
                  None, 0, -1, None)
    timer = GLib.timeout_add_seconds(20, loop.quit)
    loop.run()
    GLib.source_remove(timer)
    bus.signal_unsubscribe(sub)
    if answer.get("code") != 0:
        print(json.dumps({"error": "no screenshot (response %s)" % answer.get("code")}))
        sys.exit(1)
    path = unquote(urlparse(answer["results"]["uri"]).path)
    with open(path, "rb") as f:
        size = len(f.read())
    os.unlink(path)
    frames.append((time.monotonic() - wall, time.process_time() - cpu, size))
print(json.dumps({"frames": frames}))
"""


def say(line: str, out: list[str]) -> None:
    print(line, flush=True)
    out.append(line)


def _self_cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Way:
    """One way's frames: wall and CPU (caller, desktop) a frame."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.wall: list[float] = []
        self.caller: list[float] = []
        self.desktop: list[float] = []

    def row(self) -> str:
        def ms(values: list[float], q: float) -> float:
            return 1000 * percentile(values, q)

        return (
            f"{self.name:<34} {ms(self.wall, 0.5):>7.0f} / {ms(self.wall, 0.9):<7.0f}"
            f"{ms(self.caller, 0.5):>9.0f}   {ms(self.desktop, 0.5):>9.0f}"
        )


def desktop_pids(desk: GnomeDesktop) -> list[int]:
    """The desktop's processes that work for a frame: the shell, PipeWire, the portals."""
    return [p.pid for name, p, _log in desk.components if name.startswith(DESKTOP)]


def timed(way: Way, frames: int, desk_pids: list[int], grab: Callable[[], Any]) -> Way:
    for _ in range(frames):
        wall, caller, desktop = time.monotonic(), _self_cpu(), live_cpu_seconds(desk_pids)
        grab()
        way.wall.append(time.monotonic() - wall)
        way.caller.append(_self_cpu() - caller)
        way.desktop.append(live_cpu_seconds(desk_pids) - desktop)
    return way


def screencast_ways(desk: GnomeDesktop, frames: int, busy_s: float, out: list[str]) -> list[Way]:
    from capture.gnome import _CAPS, ScreenCast, _gstreamer

    pids = desktop_pids(desk)
    wayland = desk.env | {"WAYLAND_DISPLAY": "wayland-0"}
    cast = ScreenCast(desk.bus_address)
    try:
        cast.grab()  # the session, the stream, GStreamer's plugins loaded
        ways = [timed(Way("screencast, a frame a grab (ours)"), frames, pids, cast.grab)]
        Gst = _gstreamer()
        streaming = Gst.parse_launch(
            f"pipewiresrc path={cast.node} ! {_CAPS},max-framerate=2/1 ! "
            "appsink name=sink max-buffers=1 drop=true sync=false"
        )
        sink = streaming.get_by_name("sink")
        streaming.set_state(Gst.State.PLAYING)
        try:
            sink.emit("try-pull-sample", 5 * Gst.SECOND)

            def last() -> None:
                sample = sink.get_property("last-sample")
                _image_of(sample, Gst)

            ways.append(timed(Way("screencast, streaming (2 fps)"), frames, pids, last))
            received = [0]

            def count(_pad: Any, _info: Any) -> Any:
                received[0] += 1
                return Gst.PadProbeReturn.OK

            sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, count)
            # A terminal printing the time ten times a second (foot: no AT-SPI, so it is
            # given time to draw rather than waited for as the active window).
            ticking = "while :; do date +%T.%N; sleep 0.1; done"
            busy, _log = desk._spawn("foot", ["foot", "sh", "-c", ticking], env=wayland)
            try:
                time.sleep(2.0)
                caller, desktop, before = _self_cpu(), live_cpu_seconds(pids), received[0]
                time.sleep(busy_s)
                streamed = (_self_cpu() - caller, live_cpu_seconds(pids) - desktop)
                frames_streamed = received[0] - before
            finally:
                streaming.set_state(Gst.State.NULL)
            caller, desktop = _self_cpu(), live_cpu_seconds(pids)
            time.sleep(busy_s)
            idle = (_self_cpu() - caller, live_cpu_seconds(pids) - desktop)
            stop_group(busy)
        finally:
            streaming.set_state(Gst.State.NULL)
        say(
            f"a changing screen (a terminal printing the time 10x a second) for {busy_s:g} s, "
            f"CPU % of a core, caller / desktop ({frames_streamed} frames streamed):",
            out,
        )
        say(
            f"  streaming:           {100 * streamed[0] / busy_s:5.1f} / "
            f"{100 * streamed[1] / busy_s:5.1f}",
            out,
        )
        say(
            f"  a frame a grab:      {100 * idle[0] / busy_s:5.1f} / "
            f"{100 * idle[1] / busy_s:5.1f}   (no grab: nothing is streamed)",
            out,
        )
        node = cast.node

        def launch() -> None:
            done = subprocess.run(
                [
                    *("gst-launch-1.0", "-q", "pipewiresrc", f"path={node}", "num-buffers=1"),
                    *("!", "videoconvert", "!", "video/x-raw,format=RGB", "!", "fdsink"),
                ],
                capture_output=True,
                timeout=30,
                check=True,
            )
            assert len(done.stdout) > 1_000_000, "gst-launch gave no frame"

        ways.append(timed(Way("gst-launch-1.0, a process a grab"), frames, pids, launch))
        return ways
    finally:
        cast.close()


def _image_of(sample: Any, Gst: Any) -> Any:
    from PIL import Image

    caps = sample.get_caps().get_structure(0)
    buffer = sample.get_buffer()
    ok, mapped = buffer.map(Gst.MapFlags.READ)
    assert ok
    try:
        size = (caps.get_value("width"), caps.get_value("height"))
        return Image.frombuffer("RGB", size, mapped.data, "raw", "BGRX", 0, 1).copy()
    finally:
        buffer.unmap(mapped)


def portal_way(desk: GnomeDesktop, frames: int) -> Way:
    """Screenshots through the portal, taken by the desktop's user (see the docstring)."""
    from PIL import Image

    def as_user(*argv: str) -> str:
        process, log = desk._spawn(argv[0], list(argv), env=desk.env)
        if process.wait(timeout=600) != 0:
            raise SystemExit(f"{argv[0]} failed: {log.read_text()[-2000:]}")
        return log.read_text()

    env = desk.env | {"WAYLAND_DISPLAY": "wayland-0"}
    for program in ("xdg-permission-store", "xdg-desktop-portal-gnome", "xdg-desktop-portal"):
        desk._spawn(program, [f"/usr/libexec/{program}"], env=env)
        time.sleep(1.0)  # each owns its bus name before the next asks for it
    # The grant a person gives once, as the permission store keeps it.
    as_user(
        "gdbus",
        *("call", "--session", "--dest", STORE, "--object-path", STORE_PATH),
        *("--method", f"{STORE}.SetPermission", "screenshot", "true", "screenshot", "", "['yes']"),
    )
    pids = desktop_pids(desk)
    script = desk._private_file("portal-", "portal.py", _PORTAL_SCRIPT)
    desktop = live_cpu_seconds(pids)
    printed = as_user("/usr/bin/python3", str(script), str(frames))
    desktop = live_cpu_seconds(pids) - desktop
    answer = json.loads(printed.strip().splitlines()[-1])
    if "error" in answer:
        raise SystemExit(f"the Screenshot portal: {answer['error']}")
    way = Way("Screenshot portal (PNG files)")
    # The PNG still has to be decoded by the daemon: timed here on one of the same size.
    shot = desk.screenshot()
    png = script.parent / "decode.png"
    shot.save(png)
    started = time.process_time()
    Image.open(png).convert("RGB")
    decode = time.process_time() - started
    for wall, cpu, _size in answer["frames"]:
        way.wall.append(wall + decode)
        way.caller.append(cpu + decode)
        way.desktop.append(desktop / len(answer["frames"]))
    return way


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--busy", type=float, default=10.0)
    args = parser.parse_args(argv)
    out: list[str] = []
    say(f"# bench.gnome_pixels, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", out)
    say(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}", out)
    say(f"load average before: {load_average()}", out)
    say(f"command: python -m bench.gnome_pixels --frames {args.frames} --busy {args.busy:g}", out)
    say("desktop: headless GNOME Shell, one 1920x1080 monitor, a zenity window in front", out)
    say("", out)
    with gnome_desktop() as desk:
        # pipewiresrc, in this process and in gst-launch-1.0, finds the desktop's PipeWire.
        os.environ["PIPEWIRE_RUNTIME_DIR"] = str(desk.run_dir)
        desk.open_zenity_text(PROSE, "notes")
        time.sleep(1.0)
        ways = screencast_ways(desk, args.frames, args.busy, out)
        ways.append(portal_way(desk, args.frames))
    say("", out)
    say(
        "way                                wall ms p50 / p90   CPU ms a frame: caller   desktop",
        out,
    )
    for way in ways:
        say(way.row(), out)
    ours, portal = ways[0], ways[-1]

    def p50(way: Way) -> tuple[float, float]:
        """(wall, caller + desktop CPU) a frame, medians."""
        cpu = percentile(way.caller, 0.5) + percentile(way.desktop, 0.5)
        return percentile(way.wall, 0.5), cpu

    wall, cpu = (a / b for a, b in zip(p50(portal), p50(ours), strict=True))
    say("", out)
    say(
        f"RESULT the portal's frame takes {wall:.1f}x the wall time and {cpu:.1f}x the CPU "
        "(caller + desktop) of a screencast frame a grab, p50",
        out,
    )
    say(f"load average after: {load_average()}", out)
    RESULTS.write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
