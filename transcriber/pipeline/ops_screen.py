"""What the operator's screen (/ops) reads and does: the stopped records filtered and
searched, one record's metadata, stop flag and whole journal, resuming one or a list
(each through `operator.resume`, the same domain action as `transcriber resume`), the
pipeline at a glance, and the daemons with their workers' claims.

Every read is of metadata, states, stop reasons, error texts and journals: no query
here selects audio or transcript text, nor the owner's fields (title, summary, topics).
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import trio

from transcriber.db.database import Database, StatementCut
from transcriber.milestones import MILESTONES
from transcriber.pipeline import operator

LIST_MAX = 1000
"""The most records a filtered list shows (and so the most one bulk resume resumes)."""
JOURNAL_MAX = 5000
DAEMONS_SHOWN_FOR = dt.timedelta(days=1)
"""A daemon that stopped longer ago than this is no longer listed."""
SILENT_BEATS = 3
"""A daemon is marked silent once this many of its beats are missing."""


OLDER_MAX_S = 10 * 365 * 86400
"""The longest "stopped at least this long ago" a filter may ask: ten years, longer
than any record has been kept, and far inside what PostgreSQL's `interval` holds (past
that, or NaN or infinity, the query fails)."""


def _older(_: Any, __: Any, value: float | None) -> None:
    if value is not None and not 0 <= value <= OLDER_MAX_S:  # NaN fails both
        raise ValueError(f"older_than_s must be 0 to {OLDER_MAX_S} seconds, not {value}")


@attrs.frozen
class StoppedFilter:
    reason: str | None = None
    milestone: str | None = None
    owner: str | None = None
    older_than_s: float | None = attrs.field(default=None, validator=_older)
    """Only records stopped at least this long ago (0 to OLDER_MAX_S; ValueError else)."""
    search: str | None = None
    """A record id, an owner's name, or part of a file name."""


async def stopped_records(
    db: Database, wanted: StoppedFilter, limit: int = LIST_MAX
) -> list[dict[str, Any]]:
    """The stopped records `wanted` names, oldest stop first. Cancellation: a read."""
    rows = await db.fetch(
        "ops_stopped",
        wanted.reason,
        wanted.milestone,
        wanted.owner,
        wanted.older_than_s,
        wanted.search,
        limit,
        as_id(wanted.search),
        *id_range(wanted.search or ""),
    )
    return [dict(r) for r in rows]


SEARCH_MIN = 3
"""The shortest text searched for in file names (sql/ops.sql `ops_search` says 3 too):
a shorter one finds a record by its id or an owner by their name only."""
SEARCH_TIMEOUT_S = 1.0
"""How long one search may read before it is cut off as too broad: a text in nearly
every file name reads every record it matches (3.5 s at 1 M records), while a search
that narrows takes milliseconds."""


class SearchTooBroad(Exception):
    """The search read longer than its bound: its text is in too many file names."""


async def search(
    db: Database, text: str, limit: int = 100, *, timeout_s: float | None = None
) -> list[dict[str, Any]]:
    """Records in any state by id (or its beginning), owner's name or part of a file
    name (of SEARCH_MIN characters or more), newest first. Raises SearchTooBroad when
    the read takes longer than `timeout_s` (None: SEARCH_TIMEOUT_S; the server cuts it
    off, `fetch_within`).
    Cancellation: a plain read."""
    bound_s = SEARCH_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        lo, hi = id_range(text)
        rows = await db.fetch_within(
            "ops_search", text, limit, as_id(text), lo, hi, timeout_s=bound_s
        )
    except StatementCut as e:
        raise SearchTooBroad(text) from e
    return [dict(r) for r in rows]


ID_PREFIX_MIN = 4
"""Hex digits of an id's beginning searched as one: the screen's tables show 8."""


def id_range(text: str) -> tuple[uuid.UUID | None, uuid.UUID | None]:
    """The first and last id beginning as `text` does (hex digits, dashes where an id
    has them, ID_PREFIX_MIN digits or more), so the key finds them; (None, None) for any
    other text."""
    digits = text.strip().lower().replace("-", "")
    if not ID_PREFIX_MIN <= len(digits) < 32 or any(c not in "0123456789abcdef" for c in digits):
        return None, None
    return uuid.UUID(digits.ljust(32, "0")), uuid.UUID(digits.ljust(32, "f"))


def as_id(text: str | None) -> uuid.UUID | None:
    """The text as a record id, if it is one (so the id is looked up by its key)."""
    try:
        return None if text is None else uuid.UUID(text.strip())
    except ValueError:
        return None


async def record(db: Database, recording_id: uuid.UUID) -> dict[str, Any] | None:
    """One record's metadata, queue state and stop flag, or None. Cancellation: a read."""
    row = await db.fetchrow("ops_record", recording_id)
    return None if row is None else dict(row)


async def journal(db: Database, recording_id: uuid.UUID) -> list[dict[str, Any]]:
    """The record's whole journal (up to JOURNAL_MAX events), oldest first. The details
    are the operator's: error texts included. Cancellation: a plain read."""
    return [dict(r) for r in await db.fetch("ops_journal", recording_id, JOURNAL_MAX)]


@attrs.frozen
class ResumeOutcome:
    id: uuid.UUID
    resumed: bool
    milestone: str | None
    """Where it goes on from (resumed), or where it is (refused); None: no such record."""
    refusal: str | None


async def resume_each(
    db: Database, ids: Sequence[uuid.UUID], *, operator_name: str, batch: str | None = None
) -> list[ResumeOutcome]:
    """Each record back to work through `operator.resume` — one statement per record,
    every listed field reset, journaled origin `human` with `by` naming the operator and
    `batch` (if given) naming this call — and what each resume did. A record no longer
    stopped is refused and unchanged.

    Cancellation: the records before the cancel are resumed, the one in flight may be;
    calling again with the same list is safe (a resumed record is refused as such).
    """
    done: list[ResumeOutcome] = []
    for rid in ids:
        try:
            resumed = await operator.resume(db, rid, by=by_operator(operator_name), batch=batch)
        except operator.NotStopped as e:
            done.append(ResumeOutcome(rid, False, e.milestone, str(e)))
        else:
            done.append(ResumeOutcome(rid, True, resumed.milestone, None))
    return done


async def resumed_in(
    db: Database, batch: str, operator_name: str, refused: Sequence[uuid.UUID]
) -> list[ResumeOutcome]:
    """What a batch of resumes did, read back: the records it resumed (its journal
    events, by this operator, of the last day) and those it was refused, each with where
    it is now (None: no such record). Cancellation: plain reads."""
    rows = await db.fetch("ops_resumed_batch", batch, by_operator(operator_name))
    done = [ResumeOutcome(r["recording_id"], True, r["milestone"], None) for r in rows]
    for rid in refused:
        now = await record(db, rid)
        where = None if now is None else str(now["milestone"])
        done.append(ResumeOutcome(rid, False, where, "not stopped" if now else "no such record"))
    return done


def by_operator(name: str) -> str:
    """The journal's `by` for an action of operator `name` on the screen."""
    return f"operator:{name}"


# --- at a glance -----------------------------------------------------------------------


@attrs.frozen
class Series:
    """Counts per bucket (oldest first) of each label, over a window."""

    window: dt.timedelta
    bucket: dt.timedelta
    labels: list[str]
    counts: dict[str, list[int]]

    def per_minute(self) -> float:
        """The window's total, per minute."""
        total = sum(sum(c) for c in self.counts.values())
        return total / (self.window.total_seconds() / 60)


def series(
    rows: Sequence[Any], label: str, window: dt.timedelta, bucket: dt.timedelta, now: dt.datetime
) -> Series:
    n = int(window / bucket)
    start = now - window
    counts: dict[str, list[int]] = {}
    for r in rows:
        i = int((r["bucket"] - start) / bucket)
        counts.setdefault(str(r[label]), [0] * n)[min(max(i, 0), n - 1)] += int(r["n"])
    return Series(window, bucket, sorted(counts), counts)


@attrs.frozen
class Glance:
    at: dt.datetime
    milestones: list[operator.MilestoneStatus]
    reached_hour: Series
    reached_day: Series
    stops_hour: Series
    stops_day: Series
    audio_waiting_s: float
    audio_unclaimed_s: float
    realtime_factor: float | None
    """Recognition's seconds taken per second of audio, over the daemons listed."""


HOUR, DAY = dt.timedelta(hours=1), dt.timedelta(days=1)
REACHED = list(MILESTONES[1:])
"""The milestones a step reaches: the throughput chart's."""
MINUTE, HALF_HOUR = dt.timedelta(minutes=1), dt.timedelta(minutes=30)


@attrs.frozen
class QueueNow:
    milestones: list[operator.MilestoneStatus]
    audio_waiting_s: float
    audio_unclaimed_s: float


async def queue_now(db: Database) -> QueueNow:
    """Each milestone's records by state, and the audio waiting for recognition: only
    the records that may need work or are stopped are read. Cancellation: plain reads."""
    milestones = await operator.queue_states(db)
    waiting = await db.fetchrow("ops_audio_waiting")
    assert waiting is not None  # an aggregate always has its row
    return QueueNow(milestones, float(waiting["audio_s"]), float(waiting["unclaimed_s"]))


@attrs.frozen
class DayCounts:
    """The glance's day charts, as read at `read_at` (the cache's clock)."""

    read_at: float
    reached: Series
    stops: Series


@attrs.define
class DayCharts:
    """The day charts kept for `keep_s` in this process: their reads (about 143 ms at
    1 M records, transcriber/bench/ops_screen_cost.py) would otherwise run on every 5 s
    refresh of every open screen, and a day's chart by the half hour barely moves within
    a minute. `clock` is injectable (tests), monotonic seconds.

    Screens refreshing at once while the kept charts are stale read them once: the
    first reads, the others wait for it (a trio lock) and take what it kept."""

    keep_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    kept: DayCounts | None = None
    _lock: trio.Lock = attrs.field(factory=trio.Lock, init=False)

    async def get(self, db: Database) -> DayCounts:
        """The kept charts while fresh, else read anew (and kept).

        Cancellation: a read cancelled keeps nothing (and releases the lock), so the
        next caller reads."""
        async with self._lock:
            if self.kept is None or self.clock() - self.kept.read_at >= self.keep_s:
                self.kept = await read_day_charts(db, self.clock())
            return self.kept


async def read_day_charts(db: Database, read_at: float) -> DayCounts:
    """The day's milestones reached and stops, by the half hour. Cancellation: reads."""
    now = await db.fetchval("ops_now")
    reached = await db.fetch("ops_reached", DAY, HALF_HOUR, REACHED)
    stops = await db.fetch("ops_stops", DAY, HALF_HOUR)
    return DayCounts(
        read_at,
        series(reached, "milestone", DAY, HALF_HOUR, now),
        series(stops, "reason", DAY, HALF_HOUR, now),
    )


async def glance(db: Database, day_charts: DayCharts | None = None) -> Glance:
    """The pipeline at a glance; the day charts from `day_charts` (kept up to its
    minute), or read now when None. Cancellation: plain reads (each its own statement,
    so the figures are each exact but not of one instant)."""
    now = await db.fetchval("ops_now")
    queue = await queue_now(db)

    def counted(
        rows: Sequence[Any], label: str, window: dt.timedelta, bucket: dt.timedelta
    ) -> Series:
        return series(rows, label, window, bucket, now)

    daemons_now = await daemons(db)
    audio = sum(d.recognized_audio_s for d in daemons_now)
    taken = sum(d.recognizing_s for d in daemons_now)
    day = await (read_day_charts(db, 0.0) if day_charts is None else day_charts.get(db))
    return Glance(
        at=now,
        milestones=queue.milestones,
        reached_hour=counted(
            await db.fetch("ops_reached", HOUR, MINUTE, REACHED), "milestone", HOUR, MINUTE
        ),
        reached_day=day.reached,
        stops_hour=counted(await db.fetch("ops_stops", HOUR, MINUTE), "reason", HOUR, MINUTE),
        stops_day=day.stops,
        audio_waiting_s=queue.audio_waiting_s,
        audio_unclaimed_s=queue.audio_unclaimed_s,
        realtime_factor=taken / audio if audio > 0 else None,
    )


# --- daemons ---------------------------------------------------------------------------


@attrs.frozen
class WorkerClaim:
    worker: str
    id: uuid.UUID
    milestone: str
    attempt: int
    since: dt.datetime | None
    lease_left_s: float | None


@attrs.frozen
class DaemonView:
    id: uuid.UUID
    host: str
    pid: int
    version: str
    workers: int
    model: str | None
    device: str | None
    started_at: dt.datetime
    beat_at: dt.datetime
    beat_every_s: float
    stopped_at: dt.datetime | None
    silent_s: float
    recognized_audio_s: float
    recognizing_s: float
    claims: list[WorkerClaim]

    @property
    def state(self) -> str:
        """running, silent (stopped beating without saying it stops) or stopped."""
        if self.stopped_at is not None:
            return "stopped"
        return "silent" if self.silent_s > SILENT_BEATS * self.beat_every_s else "running"


async def daemons(db: Database) -> list[DaemonView]:
    """The daemons of the last day with what their workers hold, newest start first.
    Cancellation: plain reads."""
    rows = await db.fetch("daemons_list", DAEMONS_SHOWN_FOR)
    claims: dict[uuid.UUID, list[WorkerClaim]] = {}
    if rows:
        for c in await db.fetch("daemon_claims", [r["id"] for r in rows]):
            claims.setdefault(c["daemon"], []).append(
                WorkerClaim(
                    c["worker"],
                    c["id"],
                    c["milestone"],
                    c["attempts"],
                    c["since"],
                    c["lease_left_s"],
                )
            )
    return [
        DaemonView(
            id=r["id"],
            host=r["host"],
            pid=r["pid"],
            version=r["version"],
            workers=r["workers"],
            model=r["model"],
            device=r["device"],
            started_at=r["started_at"],
            beat_at=r["beat_at"],
            beat_every_s=float(r["beat_every_s"]),
            stopped_at=r["stopped_at"],
            silent_s=float(r["silent_s"]),
            recognized_audio_s=float(r["recognized_audio_s"]),
            recognizing_s=float(r["recognizing_s"]),
            claims=claims.get(r["id"], []),
        )
        for r in rows
    ]
