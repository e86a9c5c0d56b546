"""The Hypercorn error hook (transcriber.http.serving.install_hypercorn_error_hook): what
it changes, that a second install changes nothing more, that it refuses a Hypercorn it
was not written for, and that importing the HTTP package leaves Hypercorn alone. Its
effect on the wire (a JSON 400 for a request Hypercorn cannot parse) is tested over
real HTTP in tests/integration/test_api_hardening.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from hypercorn.protocol.h11 import H11Protocol

from transcriber.http.serving import (
    HYPERCORN_WRITTEN_FOR,
    install_hypercorn_error_hook,
)

ROOT = Path(__file__).resolve().parents[2]


def in_a_fresh_process(code: str) -> str:
    """What `code` prints, run where no test has installed the hook yet."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_the_http_package_leaves_hypercorn_alone() -> None:
    out = in_a_fresh_process(
        """
        from hypercorn.protocol.h11 import H11Protocol
        original = H11Protocol._send_error_response
        import transcriber.http, transcriber.http.serving, transcriber.daemon
        print(H11Protocol._send_error_response is original)
        """
    )
    assert out == "True"


def test_install_replaces_the_error_answer_once_and_a_second_install_changes_nothing() -> None:
    out = in_a_fresh_process(
        """
        from hypercorn.protocol.h11 import H11Protocol
        from transcriber.http.serving import _send_json_error, install_hypercorn_error_hook
        original = H11Protocol._send_error_response
        install_hypercorn_error_hook()
        first = H11Protocol._send_error_response
        install_hypercorn_error_hook()
        print(original is not _send_json_error, first is _send_json_error,
              H11Protocol._send_error_response is first)
        """
    )
    assert out == "True True True"


def test_install_refuses_another_hypercorn_with_a_clear_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = H11Protocol._send_error_response
    monkeypatch.setattr("importlib.metadata.version", lambda name: "0.19.0")
    with pytest.raises(RuntimeError) as refused:
        install_hypercorn_error_hook()
    message = str(refused.value)
    assert "Hypercorn 0.18.0" in message and "Hypercorn 0.19.0 is installed" in message
    assert "hypercorn==0.18.0" in message
    assert H11Protocol._send_error_response is before  # nothing changed


def test_the_pinned_hypercorn_is_the_one_the_hook_was_written_for() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = [d for d in project["project"]["dependencies"] if d.startswith("hypercorn")]
    assert pins == [f"hypercorn=={HYPERCORN_WRITTEN_FOR}"]
