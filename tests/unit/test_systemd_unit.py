"""The systemd unit: what the daemon promises systemd, checked by systemd's own tool."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[2] / "deploy" / "transcriber.service"


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    parser.read(UNIT)
    return parser


def test_the_unit_asks_for_notify_watchdog_restart_and_hardening() -> None:
    service = unit()["Service"]
    assert service["Type"] == "notify"
    assert int(service["WatchdogSec"]) > 0
    assert service["Restart"] == "on-failure"
    assert service["User"] == "transcriber" and service["StateDirectory"] == "transcriber"
    for hardening in ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp"):
        assert service[hardening] in ("yes", "strict")
    assert " serve " in f" {service['ExecStart']} "


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not on this machine")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    # The unit names the install path; point it at this environment's command.
    command = Path(sys.executable).parent / "transcriber"
    text = UNIT.read_text().replace("/opt/transcriber/.venv/bin/transcriber", str(command))
    copy = tmp_path / "transcriber.service"
    copy.write_text(text)
    result = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
