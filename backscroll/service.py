"""Run the capture daemon at login, as a user service of the platform's service manager.

    linux   a systemd user unit   systemd/user/backscroll.service, plus the drop-in
                                  backscroll.service.d/env.conf with the session's DISPLAY,
                                  XAUTHORITY and DBUS_SESSION_BUS_ADDRESS
                                  (config folder: $XDG_CONFIG_HOME, else ~/.config)
    darwin  a LaunchAgent         LaunchAgents/dev.backscroll.daemon.plist (in ~/Library)
    win32   a scheduled task      "Backscroll", made from Backscroll/backscroll-task.xml
                                  (in %LOCALAPPDATA%), started by a logon trigger

    done = install(home)       # writes the files, then asks the service manager to start it
    done = uninstall()         # stops it, removes the files and the folders left empty

Both are idempotent: a second ``install`` rewrites the same files and leaves one service;
``uninstall`` of nothing is not an error. The platform, the config folder, the environment
and the runner of the service-manager commands can be injected, which is how the tests write
into a temporary folder and capture the commands instead of running them.

Why the drop-in: a bare X session (startx, a display manager without systemd integration)
does not hand DISPLAY, XAUTHORITY and the session bus address to the systemd user manager,
so a unit started at login could not see the screen. ``install`` writes the values of the
shell it runs in; ``systemctl --user import-environment`` is the alternative the user is
told about, for sessions where they change.
"""

from __future__ import annotations

import os
import plistlib
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from base.errors import BackscrollError
from base.fs import ensure_dir, write_atomic
from base.home import is_default_home, resolve_home

__all__ = [
    "DISPLAY_VARIABLES",
    "LAUNCH_AGENT_LABEL",
    "TASK_NAME",
    "UNIT_NAME",
    "Done",
    "Runner",
    "install",
    "launch_agent",
    "service_files",
    "systemd_env_dropin",
    "systemd_unit",
    "task_xml",
    "uninstall",
]

UNIT_NAME = "backscroll.service"
LAUNCH_AGENT_LABEL = "dev.backscroll.daemon"
TASK_NAME = "Backscroll"
DISPLAY_VARIABLES = ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS")
LOG_FILE = "daemon.log"
TASK_NS = "http://schemas.microsoft.com/windows/2004/02/mit/task"

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


@dataclass
class Done:
    """What ``install`` or ``uninstall`` did, for the CLI to print."""

    files: list[Path] = field(default_factory=list)  # written, or removed
    commands: list[list[str]] = field(default_factory=list)  # service-manager calls, in order
    notes: list[str] = field(default_factory=list)  # lines for the user


def run_command(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """The real runner: the command's exit status and output, never an exception."""
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)
    except FileNotFoundError:
        return subprocess.CompletedProcess(list(argv), 127, "", f"{argv[0]}: not found")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), 124, "", f"{argv[0]}: timed out")


# -------------------------------------------------------------------------- the files


def service_files(platform: str, config_home: Path) -> list[Path]:
    """Every file ``install`` may write on ``platform``, under ``config_home``."""
    if platform.startswith("linux"):
        unit = config_home / "systemd" / "user" / UNIT_NAME
        return [unit, unit.with_name(UNIT_NAME + ".d") / "env.conf"]
    if platform == "darwin":
        return [config_home / "LaunchAgents" / f"{LAUNCH_AGENT_LABEL}.plist"]
    if platform in ("win32", "cygwin"):
        return [config_home / TASK_NAME / "backscroll-task.xml"]
    raise BackscrollError(f"install-service does not know the service manager of {platform}")


def daemon_argv(home: Path, python: str) -> list[str]:
    """The command the service runs: ``start`` with its log in the home, this python."""
    argv = [python, "-m", "backscroll", "start", "--log-file", str(home / LOG_FILE)]
    if not is_default_home(home):
        argv += ["--home", str(home)]
    return argv


def systemd_unit(argv: Sequence[str]) -> str:
    """The user unit. KillSignal=SIGINT: the daemon's Ctrl-C path stops it after the frame
    in hand and records the stop; SIGTERM would end it as a crash."""
    command = " ".join(_systemd_arg(a) for a in argv)
    return f"""# Written by `backscroll install-service`; `backscroll uninstall-service` removes it.
[Unit]
Description=Backscroll screen memory (capture daemon)
PartOf=graphical-session.target
After=graphical-session.target

[Service]
Type=simple
ExecStart={command}
Restart=on-failure
RestartSec=10
KillSignal=SIGINT
TimeoutStopSec=45

[Install]
WantedBy=graphical-session.target
"""


def systemd_env_dropin(environ: Mapping[str, str]) -> str | None:
    """The drop-in carrying this session's display variables; None when none is set."""
    present = [(name, environ[name]) for name in DISPLAY_VARIABLES if environ.get(name)]
    if not present:
        return None
    lines = [
        "# The session's display and bus, which a bare X session does not give the user",
        "# manager. Written by `backscroll install-service` from the shell it ran in.",
        "[Service]",
    ]
    lines += [f'Environment="{_systemd_quoted(f"{name}={value}")}"' for name, value in present]
    return "\n".join(lines) + "\n"


def launch_agent(argv: Sequence[str], log_file: Path) -> bytes:
    """The LaunchAgent: started at login, restarted when it fails (not when it stops)."""
    agent = {
        "Label": LAUNCH_AGENT_LABEL,
        "ProgramArguments": list(argv),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "LimitLoadToSessionType": "Aqua",
        "ProcessType": "Interactive",
        "ThrottleInterval": 10,
        # What fails before logging is set up (an unsupported platform) still lands here.
        "StandardErrorPath": str(log_file),
    }
    return plistlib.dumps(agent, sort_keys=False)


def task_xml(argv: Sequence[str], user: str | None) -> bytes:
    """The Task Scheduler definition, UTF-16 with a BOM as ``schtasks /XML`` wants it."""
    import xml.etree.ElementTree as ET

    def sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
        element = ET.SubElement(parent, f"{{{TASK_NS}}}{tag}", attrs)
        element.text = text
        return element

    ET.register_namespace("", TASK_NS)
    task = ET.Element(f"{{{TASK_NS}}}Task", {"version": "1.2"})
    info = sub(task, "RegistrationInfo")
    sub(info, "Description", "Backscroll screen memory: the capture daemon, started at logon.")
    logon = sub(sub(task, "Triggers"), "LogonTrigger")
    sub(logon, "Enabled", "true")
    principal = sub(sub(task, "Principals"), "Principal", id="Author")
    if user:
        # Without a user the trigger fires for anyone's logon, which needs an administrator.
        sub(logon, "UserId", user)
        sub(principal, "UserId", user)
    sub(principal, "LogonType", "InteractiveToken")
    sub(principal, "RunLevel", "LeastPrivilege")
    settings = sub(task, "Settings")
    for tag, text in (
        ("MultipleInstancesPolicy", "IgnoreNew"),
        ("DisallowStartIfOnBatteries", "false"),
        ("StopIfGoingOnBatteries", "false"),
        ("ExecutionTimeLimit", "PT0S"),  # no limit: it runs for the whole session
        ("Enabled", "true"),
    ):
        sub(settings, tag, text)
    restart = sub(settings, "RestartOnFailure")
    sub(restart, "Interval", "PT1M")  # the shortest Task Scheduler accepts
    sub(restart, "Count", "999")  # and the most
    action = sub(sub(task, "Actions", Context="Author"), "Exec")
    sub(action, "Command", argv[0])
    sub(action, "Arguments", subprocess.list2cmdline(list(argv[1:])))
    ET.indent(task)
    text = '<?xml version="1.0" encoding="UTF-16"?>\n' + ET.tostring(task, encoding="unicode")
    return (text + "\n").encode("utf-16")


# ----------------------------------------------------------------- install / uninstall


def install(
    home: str | os.PathLike[str] | None = None,
    *,
    platform: str | None = None,
    config_home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    runner: Runner | None = None,
    python: str | None = None,
    uid: int | None = None,
) -> Done:
    """Write the service's files and start it now; ``BackscrollError`` when the service
    manager refuses (the files stay, and the message says what to run)."""
    platform = platform or sys.platform
    env = os.environ if environ is None else environ
    run = runner or run_command
    config_home = config_home or default_config_home(platform, env)
    files = service_files(platform, config_home)  # raises for an unknown service manager
    store = ensure_dir(resolve_home(home))  # the log file's folder must exist at login
    argv = daemon_argv(store, python or _python(platform))
    done = Done()
    if platform.startswith("linux"):
        _install_systemd(done, argv, files, env, run)
    elif platform == "darwin":
        _write(done, files[0], launch_agent(argv, store / LOG_FILE))
        domain = f"gui/{_uid(uid)}"
        # bootstrap refuses an agent that is loaded already: unload the old one first.
        _call(done, run, ["launchctl", "bootout", f"{domain}/{LAUNCH_AGENT_LABEL}"], check=False)
        _call(done, run, ["launchctl", "bootstrap", domain, str(files[0])])
    else:
        _write(done, files[0], task_xml(argv, _windows_user(env)))
        # /F replaces a task of the same name: a second install leaves one task.
        _call(done, run, ["schtasks", "/Create", "/TN", TASK_NAME, "/XML", str(files[0]), "/F"])
        _call(done, run, ["schtasks", "/Run", "/TN", TASK_NAME])
    if not platform.startswith("linux"):
        done.notes.append(
            "note: this version of Backscroll captures Linux X11 sessions only; on this "
            "platform the service starts, says what is unsupported in its log, and stops"
        )
    done.notes.append(f"the daemon logs to {store / LOG_FILE}; `backscroll status` shows it")
    return done


def uninstall(
    *,
    platform: str | None = None,
    config_home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    runner: Runner | None = None,
    uid: int | None = None,
) -> Done:
    """Stop the service and remove its files and the folders they leave empty. A service
    manager that cannot be reached is noted, not fatal: the files go either way."""
    platform = platform or sys.platform
    env = os.environ if environ is None else environ
    run = runner or run_command
    config_home = config_home or default_config_home(platform, env)
    files = service_files(platform, config_home)
    done = Done()
    if platform.startswith("linux"):
        if files[0].exists():
            _call(done, run, ["systemctl", "--user", "disable", "--now", UNIT_NAME], check=False)
    elif platform == "darwin":
        domain = f"gui/{_uid(uid)}"
        _call(done, run, ["launchctl", "bootout", f"{domain}/{LAUNCH_AGENT_LABEL}"], check=False)
    else:
        _call(done, run, ["schtasks", "/End", "/TN", TASK_NAME], check=False)
        _call(done, run, ["schtasks", "/Delete", "/TN", TASK_NAME, "/F"], check=False)
    for path in files:
        if path.exists():
            path.unlink()
            done.files.append(path)
    for path in files:
        _remove_empty_parents(path.parent, config_home)
    if platform.startswith("linux") and done.files:
        _call(done, run, ["systemctl", "--user", "daemon-reload"], check=False)
    if not done.files:
        done.notes.append("no Backscroll service was installed here")
    return done


def default_config_home(platform: str, environ: Mapping[str, str]) -> Path:
    """Where the platform's service manager looks for a user's services."""
    home = Path(environ.get("HOME") or Path.home())
    if platform.startswith("linux"):
        return Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    if platform == "darwin":
        return home / "Library"
    if platform in ("win32", "cygwin"):
        return Path(environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    raise BackscrollError(f"install-service does not know the service manager of {platform}")


# ------------------------------------------------------------------------------ helpers


def _install_systemd(
    done: Done, argv: list[str], files: list[Path], env: Mapping[str, str], run: Runner
) -> None:
    unit, dropin = files
    changed = _write(done, unit, systemd_unit(argv).encode())
    variables = systemd_env_dropin(env)
    if variables is not None:
        changed = _write(done, dropin, variables.encode()) or changed
        names = ", ".join(name for name in DISPLAY_VARIABLES if env.get(name))
        done.notes.append(f"the unit gets {names} of this session from {dropin}")
    elif dropin.exists():
        done.notes.append(f"no display in this shell: {dropin} is kept as it was")
    else:
        done.notes.append(
            "no DISPLAY in this shell: the unit will see the display only if your session "
            "hands it over"
        )
    done.notes.append(
        "if the display or bus changes (another display, a new login), run this in your "
        "session instead: systemctl --user import-environment " + " ".join(DISPLAY_VARIABLES)
    )
    done.notes.append(
        "it starts with graphical-session.target; a bare X session (startx) that never "
        f"reaches it can run `systemctl --user start {UNIT_NAME}` from its ~/.xinitrc"
    )
    _call(done, run, ["systemctl", "--user", "daemon-reload"])
    _call(done, run, ["systemctl", "--user", "enable", "--now", UNIT_NAME])
    if changed:
        # enable --now leaves a running daemon on the old unit.
        _call(done, run, ["systemctl", "--user", "try-restart", UNIT_NAME])


def _write(done: Done, path: Path, data: bytes) -> bool:
    """Write ``data`` unless the file holds it already; whether an older file changed."""
    try:
        old: bytes | None = path.read_bytes()
    except FileNotFoundError:
        old = None
    if old != data:
        ensure_dir(path.parent)
        write_atomic(path, data, mode=0o644)  # the mode service managers' files have
    done.files.append(path)
    return old is not None and old != data


def _call(done: Done, run: Runner, argv: list[str], *, check: bool = True) -> None:
    done.commands.append(argv)
    result = run(argv)
    if result.returncode == 0:
        return
    reason = (result.stderr or result.stdout or "").strip().splitlines()
    why = reason[-1] if reason else f"exit status {result.returncode}"
    if check:
        written = ", ".join(str(p) for p in done.files)
        raise BackscrollError(
            f"`{' '.join(argv)}` failed ({why}); the service files are written ({written}): "
            "run that command in your desktop session to finish"
        )
    done.notes.append(f"`{' '.join(argv)}`: {why}")


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    """Remove ``folder`` and its parents below ``stop`` while they are empty."""
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty, or already gone
            if folder.exists():
                return
        folder = folder.parent


def _python(platform: str) -> str:
    python = Path(sys.executable).absolute()
    if platform in ("win32", "cygwin"):
        # pythonw.exe: no console window left open for the whole session.
        windowless = python.with_name("pythonw.exe")
        if windowless.exists():
            return str(windowless)
    return str(python)


def _uid(uid: int | None) -> int:
    if uid is not None:
        return uid
    getuid: Callable[[], int] | None = getattr(os, "getuid", None)
    if getuid is None:
        raise BackscrollError("launchctl needs a user id, and this platform has none")
    return getuid()


def _windows_user(environ: Mapping[str, str]) -> str | None:
    user = environ.get("USERNAME")
    if not user:
        return None
    domain = environ.get("USERDOMAIN")
    return f"{domain}\\{user}" if domain else user


_PLAIN = re.compile(r"[A-Za-z0-9_@+=:,./-]+")


def _systemd_arg(arg: str) -> str:
    """One ExecStart argument: quoted unless plain; ``%`` and ``$`` are systemd's own."""
    if _PLAIN.fullmatch(arg):
        return arg
    return '"' + _systemd_quoted(arg).replace("$", "$$") + '"'


def _systemd_quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
