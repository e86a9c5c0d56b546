"""The systemd unit and its user: what the daemon promises systemd, checked key by key
and by systemd's own tools (required in CI, where .ci/run installs them)."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
UNIT = DEPLOY / "transcriber.service"
SYSUSERS = DEPLOY / "transcriber.sysusers"
HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "SystemCallFilter": "@system-service",
    "SystemCallArchitectures": "native",
    "ProtectProc": "invisible",
    "ProcSubset": "pid",
    "RemoveIPC": "yes",
    "PrivateMounts": "yes",
    "CapabilityBoundingSet": "",
    "RestrictSUIDSGID": "yes",
    "RestrictNamespaces": "yes",
}


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    parser.read(UNIT)
    return parser


def tool(name: str) -> str:
    """systemd's tool, or a skip where it is not installed — never in CI."""
    found = shutil.which(name)
    if found is None:
        if os.environ.get("TRANSCRIBER_CI"):
            pytest.fail(f"{name} is missing in CI; .ci/run installs Debian's systemd")
        pytest.skip(f"{name} is not installed (CI requires it)")
    return found


def test_the_unit_asks_for_notify_watchdog_restart_and_hardening() -> None:
    service = unit()["Service"]
    assert service["Type"] == "notify"
    assert int(service["WatchdogSec"]) > 0
    assert service["Restart"] == "on-failure"
    assert service["User"] == "transcriber" and service["StateDirectory"] == "transcriber"
    assert {k: service.get(k) for k in HARDENING} == HARDENING
    assert int(service["LimitNOFILE"]) >= 4096 and int(service["TasksMax"]) >= 64
    assert " serve " in f" {service['ExecStart']} "


def test_the_sysusers_file_makes_the_units_user() -> None:
    entries = [
        line.split()
        for line in SYSUSERS.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert [(e[0], e[1]) for e in entries] == [("u", unit()["Service"]["User"])]


def test_systemd_sysusers_creates_the_user_in_a_scratch_root(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    result = subprocess.run(
        [tool("systemd-sysusers"), f"--root={tmp_path}", str(SYSUSERS)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    user = next(
        line.split(":")
        for line in (tmp_path / "etc" / "passwd").read_text().splitlines()
        if line.startswith("transcriber:")
    )
    assert user[5] == "/var/lib/transcriber" and user[6].endswith("nologin")


def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    # The unit names the install path; point it at this environment's command.
    command = Path(sys.executable).parent / "transcriber"
    text = UNIT.read_text().replace("/opt/transcriber/.venv/bin/transcriber", str(command))
    copy = tmp_path / "transcriber.service"
    copy.write_text(text)
    result = subprocess.run(
        [tool("systemd-analyze"), "verify", str(copy)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "transcriber.service" not in result.stderr, result.stderr  # no warning of ours
