"""install-service / uninstall-service: the files written into a temporary config folder,
checked by the service manager's own tools where they exist, with the manager's commands
captured instead of run."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest

from backscroll import service
from backscroll.service import install, uninstall
from base.errors import BackscrollError
from tests.helpers import run

SESSION = {
    "DISPLAY": ":1",
    "XAUTHORITY": "/home/alex/.Xauthority",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
}
PYTHON = str(Path(sys.executable).absolute())  # systemd-analyze checks it is executable


class Manager:
    """A fake service manager: records each command; ``refuse`` names commands that fail."""

    def __init__(self, refuse: str = "") -> None:
        self.calls: list[list[str]] = []
        self.refuse = refuse

    def __call__(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        if self.refuse and self.refuse in " ".join(argv):
            return subprocess.CompletedProcess(list(argv), 1, "", "Failed to connect to bus")
        return subprocess.CompletedProcess(list(argv), 0, "", "")


def tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def config(tmp_path: Path) -> Path:
    folder = tmp_path / "config"
    folder.mkdir()
    return folder


# ------------------------------------------------------------------------------ systemd


def linux(
    config: Path, home: Path | None, manager: Manager, environ: dict[str, str] | None = None
) -> service.Done:
    return install(
        home,
        platform="linux",
        config_home=config,
        environ=SESSION if environ is None else environ,
        runner=manager,
        python=PYTHON,
    )


def test_the_systemd_unit_runs_this_python_bound_to_the_graphical_session(
    config: Path, backscroll_home: Path
) -> None:
    done = linux(config, backscroll_home, Manager())
    unit = (config / "systemd/user/backscroll.service").read_text()
    exec_start = (
        f"ExecStart={PYTHON} -m backscroll start --log-file {backscroll_home}/daemon.log "
        f"--home {backscroll_home}"
    )
    for line in (
        exec_start,
        "Restart=on-failure",
        "PartOf=graphical-session.target",
        "After=graphical-session.target",
        "WantedBy=graphical-session.target",
        "KillSignal=SIGINT",
    ):
        assert line in unit.splitlines()
    assert done.files[0] == config / "systemd/user/backscroll.service"
    assert backscroll_home.is_dir()  # the log file's folder exists before the first login


def test_the_generated_unit_and_drop_in_pass_systemd_analyze_verify(
    config: Path, backscroll_home: Path, tmp_path: Path
) -> None:
    linux(config, backscroll_home, Manager())
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.fail("systemd-analyze is not installed: apt-get install -y systemd", pytrace=False)
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    unit = config / "systemd/user/backscroll.service"
    checked = subprocess.run(
        [analyze, "--user", "verify", str(unit)],
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime), "XDG_CONFIG_HOME": str(config)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr
    # Unknown keys and bad values are only warnings: any line about our files is a failure.
    complaints = [line for line in checked.stderr.splitlines() if str(config) in line]
    assert complaints == []


def test_the_session_display_and_bus_go_into_a_drop_in_and_import_environment_is_offered(
    config: Path, backscroll_home: Path
) -> None:
    done = linux(config, backscroll_home, Manager())
    dropin = (config / "systemd/user/backscroll.service.d/env.conf").read_text()
    assert 'Environment="DISPLAY=:1"' in dropin
    assert 'Environment="XAUTHORITY=/home/alex/.Xauthority"' in dropin
    assert 'Environment="DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus"' in dropin
    offered = "systemctl --user import-environment DISPLAY XAUTHORITY DBUS_SESSION_BUS_ADDRESS"
    assert any(offered in note for note in done.notes)


def test_without_a_display_no_drop_in_is_written(config: Path, backscroll_home: Path) -> None:
    done = linux(config, backscroll_home, Manager(), environ={})
    assert not (config / "systemd/user/backscroll.service.d").exists()
    assert any("no DISPLAY" in note for note in done.notes)


def test_installing_twice_leaves_the_same_files_and_one_enabled_unit(
    config: Path, backscroll_home: Path
) -> None:
    first = Manager()
    linux(config, backscroll_home, first)
    files = tree(config)
    again = Manager()
    linux(config, backscroll_home, again)
    assert tree(config) == files
    expected = [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", "backscroll.service"],
    ]
    assert first.calls == again.calls == expected


def test_a_changed_unit_restarts_a_running_daemon(config: Path, backscroll_home: Path) -> None:
    linux(config, backscroll_home, Manager())
    moved = Manager()
    linux(config, backscroll_home.parent / "elsewhere", moved)
    assert moved.calls[-1] == ["systemctl", "--user", "try-restart", "backscroll.service"]


def test_uninstall_disables_the_unit_and_leaves_nothing_behind(
    config: Path, backscroll_home: Path
) -> None:
    other = config / "systemd/user/other.service"
    linux(config, backscroll_home, Manager())
    manager = Manager()
    uninstall(platform="linux", config_home=config, runner=manager)
    assert tree(config) == {}
    assert manager.calls == [
        ["systemctl", "--user", "disable", "--now", "backscroll.service"],
        ["systemctl", "--user", "daemon-reload"],
    ]
    # Someone else's unit, and so its folders, are left alone.
    other.parent.mkdir(parents=True)
    other.write_text("[Service]\nExecStart=/bin/true\n")
    linux(config, backscroll_home, Manager())
    uninstall(platform="linux", config_home=config, runner=Manager())
    assert list(tree(config)) == ["systemd", "systemd/user", "systemd/user/other.service"]


def test_uninstall_of_nothing_is_not_an_error(config: Path) -> None:
    manager = Manager()
    done = uninstall(platform="linux", config_home=config, runner=manager)
    assert manager.calls == [] and done.files == []
    assert done.notes == ["no Backscroll service was installed here"]


def test_a_refusing_service_manager_is_one_clear_line_and_the_files_stay(
    config: Path, backscroll_home: Path
) -> None:
    with pytest.raises(BackscrollError, match=r"`systemctl --user daemon-reload` failed") as err:
        linux(config, backscroll_home, Manager(refuse="daemon-reload"))
    assert "\n" not in str(err.value) and "Failed to connect to bus" in str(err.value)
    assert (config / "systemd/user/backscroll.service").exists()


def test_arguments_with_spaces_and_percent_signs_are_quoted_for_systemd() -> None:
    unit = service.systemd_unit(["/opt/my python/bin/python", "--home", "/data/100% mine"])
    assert 'ExecStart="/opt/my python/bin/python" --home "/data/100%% mine"' in unit


def test_the_default_home_is_not_passed_and_the_log_goes_there(
    config: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("BACKSCROLL_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    linux(config, None, Manager())
    unit = (config / "systemd/user/backscroll.service").read_text()
    log = tmp_path / "user" / ".backscroll" / "daemon.log"
    assert f"ExecStart={PYTHON} -m backscroll start --log-file {log}\n" in unit


# ------------------------------------------------------------------------------- launchd


def test_the_launch_agent_parses_runs_at_load_and_is_kept_alive_on_failure(
    config: Path, backscroll_home: Path
) -> None:
    manager = Manager()
    install(
        backscroll_home,
        platform="darwin",
        config_home=config,
        runner=manager,
        python=PYTHON,
        uid=501,
    )
    path = config / "LaunchAgents/dev.backscroll.daemon.plist"
    agent = plistlib.loads(path.read_bytes())
    assert agent["Label"] == "dev.backscroll.daemon"
    assert agent["ProgramArguments"] == [
        PYTHON,
        *("-m", "backscroll", "start", "--log-file", str(backscroll_home / "daemon.log")),
        *("--home", str(backscroll_home)),
    ]
    assert agent["RunAtLoad"] is True
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert manager.calls == [
        ["launchctl", "bootout", "gui/501/dev.backscroll.daemon"],
        ["launchctl", "bootstrap", "gui/501", str(path)],
    ]
    files = tree(config)
    install(backscroll_home, platform="darwin", config_home=config, runner=Manager(), uid=501)
    assert tree(config).keys() == files.keys()

    removed = Manager()
    uninstall(platform="darwin", config_home=config, runner=removed, uid=501)
    assert removed.calls == [["launchctl", "bootout", "gui/501/dev.backscroll.daemon"]]
    assert tree(config) == {}


# -------------------------------------------------------------------------- Task Scheduler


def test_the_task_xml_parses_with_a_logon_trigger_and_the_daemon_command(
    config: Path, backscroll_home: Path
) -> None:
    manager = Manager()
    windows = {"USERNAME": "alex", "USERDOMAIN": "DESK"}
    install(
        backscroll_home,
        platform="win32",
        config_home=config,
        environ=windows,
        runner=manager,
        python=r"C:\Python311\pythonw.exe",
    )
    path = config / "Backscroll/backscroll-task.xml"
    assert path.read_bytes().startswith(b"\xff\xfe")  # UTF-16 with its BOM, for schtasks
    ns = {"t": service.TASK_NS}
    task = ET.parse(path).getroot()
    assert task.tag == f"{{{service.TASK_NS}}}Task"
    logon = task.find("t:Triggers/t:LogonTrigger", ns)
    assert logon is not None and logon.findtext("t:UserId", namespaces=ns) == r"DESK\alex"
    assert task.findtext("t:Actions/t:Exec/t:Command", namespaces=ns) == r"C:\Python311\pythonw.exe"
    arguments = task.findtext("t:Actions/t:Exec/t:Arguments", namespaces=ns) or ""
    assert arguments.startswith("-m backscroll start --log-file ")
    assert f"--home {backscroll_home}" in arguments
    assert manager.calls == [
        ["schtasks", "/Create", "/TN", "Backscroll", "/XML", str(path), "/F"],
        ["schtasks", "/Run", "/TN", "Backscroll"],
    ]

    removed = Manager()
    uninstall(platform="win32", config_home=config, runner=removed)
    assert removed.calls == [
        ["schtasks", "/End", "/TN", "Backscroll"],
        ["schtasks", "/Delete", "/TN", "Backscroll", "/F"],
    ]
    assert tree(config) == {}


def test_an_unknown_platform_is_refused_before_anything_is_written(
    config: Path, backscroll_home: Path
) -> None:
    with pytest.raises(BackscrollError, match="service manager of sunos5"):
        install(backscroll_home, platform="sunos5", config_home=config, runner=Manager())
    assert tree(config) == {} and not backscroll_home.exists()


# ------------------------------------------------------------------------------------ CLI


def test_the_commands_install_and_remove_the_user_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the CLI installs this platform's service; the others are tested above")
    manager = Manager()
    monkeypatch.setattr(service, "run_command", manager)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("DISPLAY", ":7")
    code, out, _ = run(capsys, "install-service")
    unit = tmp_path / "config/systemd/user/backscroll.service"
    assert code == 0 and f"installed {unit}" in out
    assert "ran: systemctl --user enable --now backscroll.service" in out
    assert "import-environment" in out
    code, out, _ = run(capsys, "uninstall-service")
    assert code == 0 and f"removed {unit}" in out
    assert not (tmp_path / "config").exists() or tree(tmp_path / "config") == {}


def test_a_refusing_service_manager_is_one_line_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the CLI installs this platform's service; the others are tested above")
    monkeypatch.setattr(service, "run_command", Manager(refuse="enable"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    code, _, err = run(capsys, "install-service")
    assert code == 1
    assert err.startswith("backscroll: `systemctl --user enable --now backscroll.service` failed")
    assert err.count("\n") == 1
