"""The locks agree with pyproject.toml: every pin declared there is locked at that version,
every locked version carries hashes, the runtime lock is the dev lock's runtime part, and
neither names a package index (`./dev lock` regenerates both)."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;]+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(path: Path) -> dict[str, str]:
    """Name → version of every requirement in a pip-compile lock; each must have hashes."""
    pins: dict[str, str] = {}
    entries = re.split(r"\n(?=\S)", path.read_text())
    for entry in entries:
        if entry.startswith("#") or not entry.strip():
            continue
        match = PIN.match(entry)
        assert match, f"{path.name}: not a pinned requirement: {entry.splitlines()[0]}"
        assert "--hash=sha256:" in entry, f"{path.name}: {match[1]} has no hash"
        pins[canonical(match[1])] = match[2]
    return pins


def declared(group: list[str]) -> dict[str, str]:
    pins = {}
    for requirement in group:
        match = PIN.match(requirement)
        assert match, f"pyproject.toml: not pinned: {requirement}"
        pins[canonical(match[1])] = match[2]
    return pins


def test_every_declared_pin_is_locked_at_its_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = declared(project["dependencies"])
    dev = declared(project["optional-dependencies"]["dev"])
    dev_lock = locked(ROOT / "requirements-dev.lock")
    runtime_lock = locked(ROOT / "requirements.lock")
    for name, version in (runtime | dev).items():
        assert dev_lock.get(name) == version, f"requirements-dev.lock: {name}=={version}"
    for name, version in runtime.items():
        assert runtime_lock.get(name) == version, f"requirements.lock: {name}=={version}"
    assert not set(dev) & set(runtime_lock), "the runtime lock holds a dev-only package"
    for name, version in runtime_lock.items():
        assert dev_lock.get(name) == version, f"the locks disagree on {name}"


def test_the_locks_name_no_index() -> None:
    for lock in ("requirements-dev.lock", "requirements.lock"):
        for line in (ROOT / lock).read_text().splitlines():
            option = line.strip().split("=")[0].split(" ")[0]
            assert option not in {
                "-i",
                "--index-url",
                "--extra-index-url",
                "-f",
                "--find-links",
                "--trusted-host",
            }, f"{lock}: {line}"
            assert "file://" not in line, f"{lock}: {line}"
