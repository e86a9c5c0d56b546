"""The fixtures every test directory shares: a real PostgreSQL for every test that touches
storage, the S3 server and a stand-in for systemd's notify socket. Helpers that are not
fixtures live in tests/helpers/.

The server: TEST_DATABASE_URL (an admin URL of PostgreSQL >= 15), else the embedded
wheel in a temporary folder. There is no silent skip: if neither works the session
fails with the reason. Each test gets its own database, cloned from a template that
was migrated once per session.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio_asyncio

from actors.log import use_logger
from tests.helpers.postgres import admin, run_with_loop, scratch_database, with_database
from transcriber.db import embedded
from transcriber.db.database import Database, open_database
from transcriber.db.migrations import migrate
from transcriber.owners import add_owner

# The product's events under its own name, as `transcriber`'s start names them.
use_logger("transcriber")


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        yield url
        return
    home = Path(tempfile.mkdtemp(prefix="transcriber-test-pg-"))
    home.chmod(0o755)  # as root, the server's files stay in this folder (see embedded)
    server = embedded.start(home, cleanup_mode="delete")
    try:
        # This server lives for one session and its files are deleted after it: nothing
        # need outlast a crash of the host, so its writes are not flushed to the disk
        # (a crash of PostgreSQL alone still loses no commit: the files are the kernel's).
        # Each test's database is made and dropped in about half the time.
        run_with_loop(
            admin,
            server.get_uri(),
            "ALTER SYSTEM SET fsync = off",
            "ALTER SYSTEM SET full_page_writes = off",
            "SELECT pg_reload_conf()",
        )
        yield server.get_uri()
    finally:
        # Stops it even if a test restarted it; interrupted sessions (Ctrl-C) come
        # here too. A killed session leaves it to the next start of this home: none.
        server.cleanup()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def template_db(pg_admin_url: str) -> Iterator[str]:
    """A migrated database that each test's database is cloned from."""
    name = f"transcriber_template_{os.getpid()}"

    async def make() -> None:
        await admin(
            pg_admin_url,
            f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
            f'CREATE DATABASE "{name}"',
        )
        async with open_database(with_database(pg_admin_url, name), min_size=1, max_size=1) as db:
            await migrate(db)

    run_with_loop(make)
    yield name
    run_with_loop(admin, pg_admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
async def aio_loop() -> AsyncIterator[None]:
    async with trio_asyncio.open_loop():
        yield


@pytest.fixture
async def db_url(pg_admin_url: str, template_db: str, aio_loop: None) -> AsyncIterator[str]:
    """The URL of a fresh, migrated database of this test's own."""
    async with scratch_database(pg_admin_url, template_db) as url:
        yield url


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    async with open_database(db_url, min_size=1, max_size=12) as database:
        yield database


@pytest.fixture
async def owner_id(db: Database) -> int:
    return (await add_owner(db, "alice")).id


@pytest.fixture(scope="session")
def moto() -> Iterator[Any]:
    """The S3 server of the object-store tests (tests/helpers/moto_store.py), once a session."""
    from tests.helpers.moto_store import moto_store

    yield from moto_store()


@pytest.fixture
def systemd(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket in place of systemd's notify socket, and its path for
    NOTIFY_SOCKET (read it with tests.helpers.notify_socket.received)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = str(tmp_path / "notify")
    sock.bind(path)
    sock.setblocking(False)
    yield sock, path
    sock.close()


# The test files that take longest (their tests' durations summed, `just test
# --durations=0`), longest first. `just test` hands whole files to its two workers in the
# order collected (--no-loadscope-reorder; xdist's own order is by number of tests, which
# left a one-test file of a minute, the chaos run, among the last): with the long ones
# first, the short ones even out the end and neither worker waits long for the other.
# Files not named keep their places after these; the order of tests in a file is kept.
LONGEST_FIRST = (
    "tests/integration/test_first_run.py",
    "tests/integration/test_a11y_browser.py",
    "tests/integration/test_microphone_browser.py",
    "tests/integration/test_audio.py",
    "tests/integration/test_recognition_process.py",
    "tests/integration/test_recognition.py",
    "tests/integration/test_deletion_faults.py",
    "tests/integration/test_openai.py",
    "tests/integration/test_page_browser.py",
    "tests/integration/test_api_hardening.py",
    "tests/integration/test_live_kept.py",
    "tests/integration/test_subtitles.py",
    "tests/integration/test_speakers_browser.py",
    "tests/integration/test_watch_outputs.py",
    "tests/integration/test_object_store.py",
    "tests/integration/test_ops_browser.py",
    "tests/integration/test_live_stream.py",
    "tests/chaos/test_chaos.py",
    "tests/integration/test_live.py",
    "tests/integration/test_speakers.py",
    "tests/integration/test_shares_follow_owner.py",
    "tests/integration/test_ops.py",
    "tests/integration/test_api.py",
    "tests/integration/test_page.py",
    "tests/integration/test_voices.py",
    "tests/integration/test_cli.py",
    "tests/integration/test_openai_speakers.py",
    "tests/integration/test_api_schema.py",
    "tests/integration/test_speaker_names.py",
    "tests/integration/test_vocabulary_and_align.py",
    "tests/integration/test_object_store_daemons.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))
