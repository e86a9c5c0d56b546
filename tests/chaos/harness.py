"""The chaos harness: real worker processes against one PostgreSQL of its own, faults
injected while records flow, then a checker that reads the database and the journal.

`python -m tests.chaos.harness [DURATION_S]` runs it alone and prints the report.

Faults, during a bounded run of `duration_s`:
  - SIGKILL of a random worker, and a replacement started (several times);
  - SIGSTOP of a worker while it is inside a step, held until another worker holds the
    record (past the lease), then SIGCONT: the live-but-stale writer;
  - one PostgreSQL restart (pg_ctl -m fast restart);
  - resumes of stopped records while steps run (`stop-*` records stop at every step,
    so some records surely stop, are resumed once, and end stopped);
  - steps that fail (retry) and stop (see tests/chaos/worker.py);
  - a poison recording that kills whichever worker process runs it (a replacement is
    started each time): it must stop `worker_lost` after the step's attempts;
  - slow-but-alive steps, several leases long: their renewals keep them.
Afterwards no more chaos and no more resumes: the workers finish, every record comes to
rest, the workers get SIGTERM, and the checker runs.
"""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import trio
import trio_asyncio

from tests.chaos.checker import check
from tests.chaos.worker import chaos_steps
from tests.helpers.pg_pipeline import accept
from transcriber.db import embedded
from transcriber.db.database import Database, open_database
from transcriber.db.migrations import migrate
from transcriber.milestones import TRANSCRIBED
from transcriber.owners import add_owner
from transcriber.pipeline import operator
from transcriber.pipeline.operator import NotStopped
from transcriber.pipeline.pg_queue import PgQueue

ROOT = Path(__file__).resolve().parents[2]
ALWAYS_STOP = 4
FLAKY = 10
POISON = 1
SLOW = 6


def restart_server(server: Any) -> None:
    """Stop the server (fast shutdown: sessions are cut) and start it again."""
    server.restart()


async def patient(fn: Any, *args: Any, limit_s: float = 60.0) -> Any:
    """Call `fn` until it answers: the database may be restarting."""
    deadline = trio.current_time() + limit_s
    while True:
        try:
            return await fn(*args)
        except Exception:  # the server is away; try again
            if trio.current_time() > deadline:
                raise
            await trio.sleep(0.2)


@attrs.define(eq=False)
class WorkerProc:
    n: int
    proc: Any
    step_log: Path
    out: Any
    killed: bool = False
    """Killed by the harness (not dead of a poison recording)."""

    def open_steps(self) -> dict[str, str]:
        """Tokens of steps begun and not ended → record id."""
        open_: dict[str, str] = {}
        try:
            lines = self.step_log.read_text().splitlines()
        except FileNotFoundError:
            return open_
        for line in lines:
            parts = line.split()
            if len(parts) != 3:
                continue  # a line half written
            what, rid, token = parts
            if what == "begin":
                open_[token] = rid
            else:
                open_.pop(token, None)
        return open_


@attrs.define(eq=False)
class Chaos:
    db: Database
    url: str
    server: Any
    workdir: Path
    duration_s: float
    rng: random.Random
    workers: list[WorkerProc] = attrs.field(factory=list)
    finished: list[WorkerProc] = attrs.field(factory=list)
    counts: Counter[str] = attrs.field(factory=Counter)
    resumed: set[str] = attrs.field(factory=set)
    names: dict[str, str] = attrs.field(factory=dict)
    freeze_tokens: list[str] = attrs.field(factory=list)
    chaos_over: bool = False
    started: int = 0
    stopping: bool = False
    kills: int | None = None
    """SIGKILLs spread evenly over the chaos (at scale); None: a few, at random."""
    freezes: int = 1
    frozen: WorkerProc | None = None
    """The worker held by SIGSTOP right now: no kill takes it (its late write is wanted)."""

    async def start_worker(self) -> WorkerProc:
        self.started += 1
        n = self.started
        step_log = self.workdir / f"worker-{n}.steps"
        out = open(self.workdir / f"worker-{n}.log", "wb")  # noqa: SIM115 - closed at the end
        env = dict(os.environ, CHAOS_STEP_LOG=str(step_log))
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "tests.chaos.worker", self.url, str(self.rng.randrange(2**31))],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        w = WorkerProc(n, proc, step_log, out)
        self.workers.append(w)
        return w

    async def watch(self) -> None:
        """Replace a worker process that died by itself (a poison recording killed it),
        as systemd would restart the service."""
        while not self.stopping:
            for w in list(self.workers):
                if not w.killed and w.proc.poll() is not None:
                    self.workers.remove(w)
                    self.finished.append(w)
                    self.counts["worker_deaths"] += 1
                    await self.start_worker()
            await trio.sleep(0.05)

    async def kill_one(self) -> None:
        victim = self.rng.choice([w for w in self.workers if w is not self.frozen])
        victim.killed = True
        victim.proc.send_signal(signal.SIGKILL)
        await victim.proc.wait()
        self.workers.remove(victim)
        self.finished.append(victim)
        self.counts["kills"] += 1
        await self.start_worker()

    async def token_of(self, rid: str) -> Any:
        return await patient(
            lambda: self.db.run(
                lambda con: con.fetchval(
                    "SELECT claim_token::text FROM recordings WHERE id = $1::uuid", rid
                )
            )
        )

    async def freeze_one(self) -> None:
        """SIGSTOP a worker inside a step; hold it until another worker holds that
        record, then SIGCONT: its late write must be refused."""
        for _ in range(100):
            w = self.rng.choice(self.workers)
            if w.proc.poll() is not None:
                continue  # just died of the poison; the watcher replaces it
            self.frozen = w
            w.proc.send_signal(signal.SIGSTOP)
            await trio.sleep(0.05)  # a line written just before the stop lands
            open_ = w.open_steps()
            if not open_:
                w.proc.send_signal(signal.SIGCONT)
                self.frozen = None
                await trio.sleep(0.1)
                continue
            token, rid = next(iter(open_.items()))
            self.counts["freezes"] += 1
            stopped_at = trio.current_time()
            await trio.sleep(2.0)  # well past the 0.5 s lease
            taken_over = False
            while trio.current_time() - stopped_at < 20:
                now_token = await self.token_of(rid)
                if now_token != token:
                    taken_over = True
                    break  # another worker took the record (and may be done with it)
                await trio.sleep(0.1)
            self.counts["frozen_s"] = max(
                self.counts["frozen_s"], round(trio.current_time() - stopped_at, 2)
            )
            w.proc.send_signal(signal.SIGCONT)
            if taken_over:  # its late writes are stale: each must be refused
                self.freeze_tokens.append(token)
            else:  # still its own record: its writes may land
                self.counts["freezes_not_taken_over"] += 1
            await trio.sleep(1.0)  # its late write goes out before any kill may take it
            self.frozen = None
            return
        raise AssertionError("never caught a worker inside a step")

    async def script(self, t0: float) -> None:
        d = self.duration_s

        async def at(fraction: float) -> None:
            await trio.sleep_until(t0 + fraction * d)

        if self.kills is not None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.kill_evenly, t0)
                await at(0.25)
                await self.freeze_one()
                await at(0.45)
                await trio.to_thread.run_sync(restart_server, self.server)
                self.counts["restarts"] += 1
                for i in range(1, self.freezes):
                    await at(0.45 + 0.35 * i / self.freezes)
                    await self.freeze_one()
            return
        await at(0.12)
        await self.kill_one()
        await at(0.25)
        await self.freeze_one()
        await at(0.45)
        await trio.to_thread.run_sync(restart_server, self.server)
        self.counts["restarts"] += 1
        await at(0.6)
        await self.kill_one()
        while trio.current_time() < t0 + 0.85 * d:
            await trio.sleep(self.rng.uniform(0.05, 0.15) * d)
            await self.kill_one()

    async def kill_evenly(self, t0: float) -> None:
        """`kills` SIGKILLs spread evenly over 5-85 % of the chaos."""
        assert self.kills is not None
        for i in range(self.kills):
            await trio.sleep_until(t0 + self.duration_s * (0.05 + 0.8 * i / self.kills))
            await self.kill_one()

    async def feed(self, owner: int, total: int, t0: float) -> None:
        names = (
            [f"stop-{i}.wav" for i in range(ALWAYS_STOP)]
            + [f"flaky-{i}.wav" for i in range(FLAKY)]
            + [f"poison-{i}.wav" for i in range(POISON)]
            + [f"slow-{i}.wav" for i in range(SLOW)]
        )
        names += [f"rec-{i}.wav" for i in range(total - len(names))]
        first = max(len(names) // 3, ALWAYS_STOP + FLAKY + POISON + SLOW)
        rest = names[first:]
        for name in names[:first]:
            self.names[str(await patient(accept, self.db, owner, name))] = name
        span = 0.6 * self.duration_s
        for i, name in enumerate(rest):
            await trio.sleep_until(t0 + span * (i + 1) / len(rest))
            self.names[str(await patient(accept, self.db, owner, name))] = name

    async def resume_stopped(self, queue: PgQueue, t0: float) -> None:
        """While the chaos lasts, return stopped records to work: each `stop-*` record
        once (it stops again), others with probability 0.6 per pass."""
        while trio.current_time() < t0 + self.duration_s:
            await trio.sleep(1.5)
            rows = await patient(
                lambda: self.db.run(
                    lambda con: con.fetch(
                        "SELECT id::text AS id FROM recordings WHERE stopped_at IS NOT NULL"
                    )
                )
            )
            for row in rows:
                rid = row["id"]
                name = self.names.get(rid, "")
                if name.startswith("poison-"):
                    continue  # it would only kill more workers
                if name.startswith("stop-"):
                    if rid in self.resumed:
                        continue
                elif self.rng.random() > 0.6:
                    continue
                try:
                    await operator.resume(
                        queue.db, rid, by="chaos", now=queue.now, patience_s=queue.patience_s
                    )
                except NotStopped:
                    continue
                self.resumed.add(rid)
                self.counts["resume_calls"] += 1

    async def unsettled(self) -> int:
        return await patient(
            lambda: self.db.run(
                lambda con: con.fetchval(
                    "SELECT count(*) FROM recordings WHERE milestone <> $1 AND stopped_at IS NULL",
                    TRANSCRIBED,
                )
            )
        )

    async def stop_workers(self) -> dict[int, int | None]:
        self.stopping = True
        for w in self.workers:
            w.proc.send_signal(signal.SIGCONT)
            w.proc.send_signal(signal.SIGTERM)
        codes: dict[int, int | None] = {}
        for w in self.workers:
            with trio.move_on_after(20):
                await w.proc.wait()
            if w.proc.returncode is None:
                w.proc.send_signal(signal.SIGKILL)
                await w.proc.wait()
                codes[w.n] = None
            else:
                codes[w.n] = w.proc.returncode
        self.finished.extend(self.workers)
        self.workers = []
        return codes

    def close(self) -> None:
        for w in self.workers + self.finished:
            if w.proc.returncode is None:
                w.proc.kill()
            w.out.close()


async def chaos_run(
    server: Any,
    workdir: Path,
    duration_s: float,
    records: int,
    seed: int,
    k: int = 3,
    settle_s: float = 60.0,
    kills: int | None = None,
    freezes: int = 1,
) -> dict[str, Any]:
    url = server.get_uri()
    rng = random.Random(seed)
    async with trio_asyncio.open_loop():
        async with open_database(url, min_size=1, max_size=4) as db:
            await migrate(db)
            owner = (await add_owner(db, "chaos")).id
            chaos = Chaos(db, url, server, workdir, duration_s, rng, kills=kills, freezes=freezes)
            queue = PgQueue(db, chaos_steps(), rng=rng)
            t_begin = trio.current_time()
            try:
                for _ in range(k):
                    await chaos.start_worker()
                t0 = trio.current_time()
                async with trio.open_nursery() as watching:
                    watching.start_soon(chaos.watch)
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(chaos.script, t0)
                        nursery.start_soon(chaos.feed, owner, records, t0)
                        nursery.start_soon(chaos.resume_stopped, queue, t0)
                    # The chaos is over: nothing more is resumed; the workers finish.
                    settle_deadline = trio.current_time() + settle_s
                    while (
                        left := await chaos.unsettled()
                    ) and trio.current_time() < settle_deadline:
                        await trio.sleep(0.2)
                    watching.cancel_scope.cancel()
                codes = await chaos.stop_workers()
            finally:
                chaos.close()
            report = await check(db, chaos.counts, chaos.resumed, chaos.freeze_tokens, chaos.names)
            report["unsettled_at_end"] = left
            report["exit_codes"] = codes
            if left:
                report["violations"].append(f"{left} records not at rest after {settle_s}s")
            bad_exit = {n: c for n, c in codes.items() if c != 0}
            if bad_exit:
                report["violations"].append(f"workers exited badly on SIGTERM: {bad_exit}")
            report["ok"] = not report["violations"]
            report["workers_started"] = chaos.started
            report["chaos_s"] = duration_s
            report["run_s"] = round(trio.current_time() - t_begin, 1)
            report["seed"] = seed
            return report


def run(
    duration_s: float = 45.0,
    records: int | None = None,
    seed: int | None = None,
    *,
    kills: int | None = None,
    freezes: int = 1,
    settle_s: float = 60.0,
) -> dict[str, Any]:
    """Start a PostgreSQL of its own, run the chaos, check, print and return the report.
    `kills`: that many SIGKILLs spread over the chaos (None: a few at random); `freezes`:
    workers held by SIGSTOP past the lease, one after the other."""
    seed = random.randrange(2**31) if seed is None else seed
    records = records or max(150, int(duration_s * 3))
    home = Path(tempfile.mkdtemp(prefix="transcriber-chaos-"))
    workdir = home / "workers"
    workdir.mkdir()
    server = embedded.start(home, cleanup_mode="delete")
    try:
        report = trio.run(
            functools.partial(
                chaos_run,
                server,
                workdir,
                duration_s,
                records,
                seed,
                settle_s=settle_s,
                kills=kills,
                freezes=freezes,
            )
        )
    finally:
        # Stops the server the restart started, not the one it began with.
        server.cleanup()
        left = embedded.server_processes(server.pgdata)
        keep = os.environ.get("CHAOS_KEEP_LOGS")
        if keep:
            shutil.copytree(workdir, keep, dirs_exist_ok=True)
        shutil.rmtree(home, ignore_errors=True)
    report["postgres_left"] = left
    if left:
        report["violations"].append(f"PostgreSQL processes left running: {left}")
        report["ok"] = False
    print("chaos report:", json.dumps(report, indent=2, default=str))
    return report


def parse_duration(text: str) -> float:
    """`90`, `90s`, `10m`, `1h` → seconds."""
    text = text.strip().lower()
    units = {"s": 1, "m": 60, "h": 3600}
    if text and text[-1] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text)


if __name__ == "__main__":
    r = run(parse_duration(sys.argv[1]) if len(sys.argv) > 1 else 45.0)
    sys.exit(0 if r["ok"] else 1)
