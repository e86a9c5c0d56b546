"""`just mutate`: small breaks of the queue's SQL and code, one at a time, each of which
the fast queue tests must catch. A mutant that survives (the tests stay green with the
guard broken) is a guard no test pins: the run fails and names it.

    python -m tests.mutate [NAME ...]     # all mutants, or only those named

Each mutant replaces one exact text (found once) in one file of a copy of the tree
(never the worktree itself), then runs there, with `-x` against one PostgreSQL started
for the whole run, the test meant to kill it and, only if that passes, all of
MUTANT_TESTS. Keep the list growing with the code: a new guard
gets a mutant here and a test that kills it; tests/unit/test_mutations.py checks that
every mutant still applies to the current files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[1]

MUTANT_TESTS = (
    "tests/integration/test_queue_guards.py",
    "tests/integration/test_queue_state_machine.py",
    "tests/integration/test_shared_trips.py",
    "tests/integration/test_queue_protocol.py",
    "tests/integration/test_queue.py",
    "tests/integration/test_lost_replies.py",
)
"""The fast tests of the queue, the guards' own first (most mutants die there)."""

CLAIM = "sql/0017_hot_commits.sql"
QUEUE_SQL = "sql/queue.sql"
PG_QUEUE = "transcriber/pipeline/pg_queue.py"
SHARED_TRIPS = "transcriber/pipeline/shared_trips.py"


GUARDS = "tests/integration/test_queue_guards.py::test_"
MACHINE = "tests/integration/test_queue_state_machine.py"
TRIPS = "tests/integration/test_shared_trips.py::test_"
PROTOCOL = "tests/integration/test_queue_protocol.py::test_"


@attrs.frozen
class Mutant:
    name: str
    path: str
    old: str
    new: str
    first: str = MACHINE
    """The test meant to kill it, run first (the whole MUTANT_TESTS only if it passes)."""


MUTANTS = (
    # The claim (claim_next).
    Mutant(
        "claim order without the key",
        CLAIM,
        "ORDER BY r.created_at, r.id\n     LIMIT",
        "ORDER BY r.created_at\n     LIMIT",
        first=GUARDS + "the_key_breaks_ties_whatever_the_plan",
    ),
    Mutant(
        "a commit changes a column of the claim's index",
        CLAIM,
        "ON recordings (created_at, id)",
        "ON recordings (created_at, id, milestone)",
        first="tests/integration/test_queue.py::"
        "test_only_the_commit_to_the_final_milestone_writes_index_entries",
    ),
    Mutant(
        "claim without SKIP LOCKED",
        CLAIM,
        "FOR UPDATE OF r SKIP LOCKED",
        "FOR UPDATE OF r",
        first=GUARDS + "one_record_has_one_claimer_while_another_claim_is_in_flight",
    ),
    Mutant(
        "claim without the row lock",
        CLAIM,
        "       FOR UPDATE OF r SKIP LOCKED\n",
        "",
        first=GUARDS + "one_record_has_one_claimer_while_another_claim_is_in_flight",
    ),
    Mutant(
        "stopped records claimable",
        CLAIM,
        "WHERE r.stopped_at IS NULL\n       AND NOT r.finished",
        "WHERE NOT r.finished",
        first=PROTOCOL + "stop_parks_the_record_at_its_milestone[postgres]",
    ),
    Mutant(
        "spent attempts kept out of selection",
        CLAIM,
        "       AND r.id <> ALL (p_exclude)\n",
        "       AND r.id <> ALL (p_exclude)\n       AND r.attempts < 5\n",
        first=GUARDS + "no_condition_keeps_a_spent_record_out_of_selection",
    ),
    Mutant(
        "records past a day kept out of selection",
        CLAIM,
        "       AND r.id <> ALL (p_exclude)\n",
        "       AND r.id <> ALL (p_exclude)\n"
        "       AND r.milestone_entered_at > coalesce(p_now, now()) - interval '24 hours'\n",
        first=GUARDS + "no_condition_keeps_a_spent_record_out_of_selection",
    ),
    Mutant(
        "a lease ending now is still held",
        CLAIM,
        "r.lease_expires_at <= coalesce(p_now, now())",
        "r.lease_expires_at < coalesce(p_now, now())",
        first=GUARDS + "no_condition_keeps_a_spent_record_out_of_selection",
    ),
    Mutant(
        "an ended retry pause keeps the record out",
        CLAIM,
        "AND (r.retry_at IS NULL OR r.retry_at <= coalesce(p_now, now()))",
        "AND r.retry_at IS NULL",
        first=GUARDS + "no_condition_keeps_a_spent_record_out_of_selection",
    ),
    Mutant(
        "lease without the recording's duration",
        CLAIM,
        "step.lease_base_s + step.lease_per_audio_s * coalesce(r.duration_s, 0) AS lease_s",
        "step.lease_base_s AS lease_s",
        first=GUARDS + "the_lease_is_the_steps_and_grows_with_the_recording",
    ),
    Mutant("claims count no attempt", CLAIM, "       attempts = r.attempts + 1,\n", ""),
    # The fenced writes (sql/queue.sql).
    Mutant(
        "commit fence dropped",
        QUEUE_SQL,
        "WHERE r.id = c.id AND r.claim_token = c.token AND r.milestone = c.from_milestone",
        "WHERE r.id = c.id AND r.milestone = c.from_milestone",
        first=GUARDS + "every_write_of_a_stale_token_is_refused",
    ),
    Mutant(
        "commit fence loosened to unclaimed records",
        QUEUE_SQL,
        "WHERE r.id = c.id AND r.claim_token = c.token AND r.milestone = c.from_milestone",
        "WHERE r.id = c.id AND (r.claim_token = c.token OR r.claim_token IS NULL)"
        " AND r.milestone = c.from_milestone",
        first=GUARDS + "every_write_of_a_stale_token_is_refused",
    ),
    Mutant(
        "fail fence dropped",
        QUEUE_SQL,
        "           progress = NULL\n"
        "     WHERE id = $1 AND claim_token = $2 AND stopped_at IS NULL\n"
        "    RETURNING id, attempts",
        "           progress = NULL\n     WHERE id = $1 AND stopped_at IS NULL\n"
        "    RETURNING id, attempts",
        first=GUARDS + "every_write_of_a_stale_token_is_refused",
    ),
    Mutant(
        "stop fence dropped",
        QUEUE_SQL,
        "stop_error = $4,\n           progress = NULL\n     WHERE id = $1 AND claim_token = $2",
        "stop_error = $4,\n           progress = NULL\n     WHERE id = $1",
        first=GUARDS + "every_write_of_a_stale_token_is_refused",
    ),
    Mutant(
        "progress fence dropped",
        QUEUE_SQL,
        "UPDATE recordings SET progress = $3\n     WHERE id = $1 AND claim_token = $2",
        "UPDATE recordings SET progress = $3\n     WHERE id = $1",
        first=GUARDS + "every_write_of_a_stale_token_is_refused",
    ),
    Mutant(
        "renew fence dropped",
        QUEUE_SQL,
        "make_interval(secs => $3)\n     WHERE id = $1 AND claim_token = $2 AND stopped_at IS NULL",
        "make_interval(secs => $3)\n     WHERE id = $1 AND stopped_at IS NULL",
        first=GUARDS + "every_write_of_a_stale_token_is_refused",
    ),
    Mutant(
        "renewal a no-op",
        QUEUE_SQL,
        "SET lease_expires_at = coalesce($5::timestamptz, now()) + make_interval(secs => $3)",
        # The same parameters, typed as before: a valid statement that keeps the lease.
        "SET lease_expires_at = greatest(lease_expires_at,"
        " coalesce($5::timestamptz, now()) - make_interval(secs => $3))",
        first=GUARDS + "renewal_moves_the_lease_on_postgresql",
    ),
    Mutant(
        "a stopped record's lease renewed",
        QUEUE_SQL,
        "make_interval(secs => $3)\n     WHERE id = $1 AND claim_token = $2 AND stopped_at IS NULL",
        "make_interval(secs => $3)\n     WHERE id = $1 AND claim_token = $2",
        first=GUARDS + "renewal_moves_the_lease_on_postgresql",
    ),
    Mutant(
        "release fence dropped",
        QUEUE_SQL,
        "attempts = greatest(attempts - 1, 0)\n     WHERE id = $1 AND claim_token = $2",
        "attempts = greatest(attempts - 1, 0)\n     WHERE id = $1",
        first=GUARDS + "every_write_of_a_stale_token_is_refused",
    ),
    Mutant(
        "release keeps the attempt",
        QUEUE_SQL,
        "attempts = greatest(attempts - 1, 0)\n     WHERE id = $1 AND claim_token = $2",
        "attempts = attempts\n     WHERE id = $1 AND claim_token = $2",
        first=PROTOCOL + "release_hands_the_record_back_at_once[postgres]",
    ),
    # Resume (sql/queue.sql, called by transcriber/pipeline/operator.py).
    Mutant(
        "resume keeps the stop's error text",
        QUEUE_SQL,
        "SET stopped_at = NULL, stop_reason = NULL, stop_error = NULL,",
        "SET stopped_at = NULL, stop_reason = NULL,",
        first=GUARDS + "resume_clears_everything_the_stop_and_the_run_left",
    ),
    Mutant(
        "resume keeps the stopped claim",
        QUEUE_SQL,
        "           claim_token = NULL, lease_expires_at = NULL,\n           attempts = 0,",
        "           attempts = 0,",
        first=GUARDS + "resume_clears_everything_the_stop_and_the_run_left",
    ),
    Mutant(
        "resume keeps the attempts",
        QUEUE_SQL,
        "           attempts = 0, retry_at = NULL,\n           milestone_entered_at",
        "           retry_at = NULL,\n           milestone_entered_at",
        first=GUARDS + "resume_clears_everything_the_stop_and_the_run_left",
    ),
    Mutant(
        "resume keeps the retry pause",
        QUEUE_SQL,
        "           attempts = 0, retry_at = NULL,\n           milestone_entered_at",
        "           attempts = 0,\n           milestone_entered_at",
        first=GUARDS + "resume_clears_everything_the_stop_and_the_run_left",
    ),
    Mutant(
        "resume keeps the milestone's entry time",
        QUEUE_SQL,
        "           milestone_entered_at = coalesce($3::timestamptz, now()),\n"
        "           progress = NULL\n     WHERE id = $1 AND stopped_at IS NOT NULL",
        "           milestone_entered_at = coalesce(milestone_entered_at, $3::timestamptz),\n"
        "           progress = NULL\n     WHERE id = $1 AND stopped_at IS NOT NULL",
        first=GUARDS + "resume_clears_everything_the_stop_and_the_run_left",
    ),
    # The queue's code (its single writes, and its shared trips).
    Mutant(
        "renewal with the base lease only",
        PG_QUEUE,
        'step.lease.seconds(job.inputs.get("duration_s"))',
        "step.lease.base_s",
        first=GUARDS + "the_lease_is_the_steps_and_grows_with_the_recording",
    ),
    Mutant(
        "a failed trip's claims kept",
        SHARED_TRIPS,
        'await self._release_shielded(trip.take(), "trip failed")',
        "trip.take()",
        first=TRIPS + "trip_cancelled_by_the_server_after_its_claims_leaks_nothing",
    ),
    Mutant(
        "a failed trip's error raised to every ask",
        SHARED_TRIPS,
        "if a.error is None and self._unanswered(a):",
        "if a.error is None:",
        first=TRIPS + "trip_cancelled_by_the_server_after_its_claims_leaks_nothing",
    ),
    Mutant(
        "records of asks gone during the trip kept",
        SHARED_TRIPS,
        "left = [a.job for a in asks if a.gone and a.job is not None]",
        "left: list[Job] = []",
        first=TRIPS + "asks_whose_patience_ends_late_in_the_trip_leave_nothing_claimed",
    ),
    Mutant(
        "a trip leaves before the asks of its moment",
        SHARED_TRIPS,
        "        await trio.lowlevel.cancel_shielded_checkpoint()\n",
        "",
        first=TRIPS + "asks_of_one_moment_leave_together_when_no_trip_is_out",
    ),
    Mutant(
        "a cut trip's claims kept",
        SHARED_TRIPS,
        'await self._release_shielded(trip.take(), "trip cut")',
        "trip.take()",
        first=TRIPS + "leader_cancelled_after_its_statement_leaves_nothing_claimed",
    ),
)


def apply(text: str, mutant: Mutant) -> str:
    """`text` with the mutant's change; ValueError unless its text is found exactly once."""
    found = text.count(mutant.old)
    if found != 1:
        raise ValueError(f"{mutant.name}: its text is found {found} times in {mutant.path}")
    return text.replace(mutant.old, mutant.new)


def copy_tree(into: Path) -> None:
    """The tracked files of the worktree, as they are now (uncommitted changes too)."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src, dst = ROOT / name.decode(), into / name.decode()
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        elif src.is_file():
            shutil.copy2(src, dst)


def run_tests(
    tree: Path, env: dict[str, str], basetemp: Path, tests: tuple[str, ...] = MUTANT_TESTS
) -> tuple[bool, float, str]:
    t = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-x",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--basetemp={basetemp}",
            *tests,
        ],
        cwd=tree,
        env=env | {"PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
    )
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return done.returncode == 0, time.monotonic() - t, last


def main(names: list[str]) -> int:
    from transcriber.db import embedded

    chosen = [m for m in MUTANTS if not names or m.name in names]
    for m in chosen:  # all of them apply, before anything runs
        apply((ROOT / m.path).read_text(), m)
    work = Path(tempfile.mkdtemp(prefix="transcriber-mutate-"))
    home = work / "pg"
    home.mkdir()
    home.chmod(0o755)
    server = embedded.start(home, cleanup_mode="delete")
    survivors: list[str] = []
    try:
        tree = work / "tree"
        copy_tree(tree)
        env = dict(os.environ) | {"TEST_DATABASE_URL": server.get_uri()}
        ok, took, last = run_tests(tree, env, work / "bt")
        print(f"unmutated: {'green' if ok else 'RED'} in {took:.0f} s ({last})", flush=True)
        if not ok:
            print("the tests fail without any mutant: fix them first", file=sys.stderr)
            return 2
        for m in chosen:
            target = tree / m.path
            original = target.read_text()
            target.write_text(apply(original, m))
            try:
                ok, took, last = run_tests(tree, env, work / "bt", (m.first,))
                if ok:  # its own test missed it: does anything else catch it?
                    ok, more, last = run_tests(tree, env, work / "bt")
                    took += more
            finally:
                target.write_text(original)
            verdict = "SURVIVED" if ok else "killed"
            print(f"{verdict:8}  {m.name}  ({took:.0f} s: {last})", flush=True)
            if ok:
                survivors.append(m.name)
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(chosen) - len(survivors)} of {len(chosen)} mutants killed")
    if survivors:
        print("survived: " + "; ".join(survivors), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
