"""The code behind the owner's requests, read rather than run (issue 12): every query an
owner's request runs names the owner, and no route runs its endpoint or dependencies in a
worker thread."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi import APIRouter, Depends, Request

from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.db.named_sql import load_queries
from transcriber.http import create_app

ROOT = Path(__file__).resolve().parents[2]


def archive(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("archive", title)


# --- 11. the owner in the SQL --------------------------------------------------------------

# The code an owner's request runs: the routes and the owner's archive they call (the
# operator's reads of any record are in transcriber.pipeline.operator, which no route
# acting for an owner calls).
OWNER_FACING_CODE = tuple(ROOT / "transcriber" / p for p in ("http", "records", "intake"))
BY_NAME = frozenset({"fetch", "fetchrow", "fetchval", "execute"})
# Queries the HTTP code runs that read or write no owner's record, and why.
NOT_OWNER_FACING = {
    "owner_by_token": "finds the owner of a token: there is no owner yet",
    "health": "touches no record",
    "sources_referenced": "the startup sweep of the upload store, not a request",
    # A deletion's bytes, removed by the daemons' rounds (records/deletion.py): the
    # record, and so its owner, is gone; the to-do rows are every owner's, read by none.
    "unfinished_removals": "the daemons' removal round, not a request",
    "removal_done": "the daemons' removal round, not a request",
    # The recognize step's drafts (records/drafts.py): written by the claim's holder,
    # fenced by its token, not by a request; the streamed answer reads `owner_draft`.
    "drafts_begin": "the recognize step's write, fenced by its claim token",
    "drafts_add": "the recognize step's write, fenced by its claim token",
    # The page's sign-in sessions: no record of an owner is read or written by these.
    "page_session": "finds the session of a cookie's secret: there is no owner yet",
    "page_session_add": "makes a session for the owner whose token was just checked "
    "(`owners.id = $1`); it reads no record",
    "page_sessions_sweep": "deletes sessions no token can use any more, of every owner; "
    "it reads no record",
    # The operator's sessions (records/page_sessions.py keeps both kinds): no owner's.
    "ops_session": "finds the operator's session of a cookie's secret",
    "ops_session_add": "makes a session for the operator whose token was just checked",
    "ops_session_end": "ends the operator's own session",
    # A shared link is a capability: it finds its record and owner by the secret's hash,
    # then everything is read with the owner's own queries.
    "share_open": "finds the record of a link's secret: there is no owner yet",
    "share_find": "finds the record of a link's secret: there is no owner yet",
}
# An INSERT names the owner as the value of owner_id, not in a condition.
INSERTS_FOR_THE_OWNER = {"accept_upload"}
OWNER_CONDITION = re.compile(r"\bowner_id\s*=\s*\$1\b")


def queries_called(*folders: Path) -> dict[str, list[str]]:
    """Every query name the code under `folders` calls by name, with where."""
    found: dict[str, list[str]] = {}
    for path in sorted(p for folder in folders for p in folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in BY_NAME
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.setdefault(node.args[0].value, []).append(f"{path.name}:{node.lineno}")
    return found


def without_owner_condition(called: dict[str, list[str]]) -> list[str]:
    """The called queries that an owner's request runs without naming the owner."""
    queries = load_queries()
    missing = []
    for name, where in called.items():
        if name in NOT_OWNER_FACING:
            continue
        sql = re.sub(r"--[^\n]*", "", queries[name])
        if name in INSERTS_FOR_THE_OWNER:
            ok = re.search(r"INSERT INTO recordings \(owner_id,.*?VALUES \(\$1,", sql, re.S)
        else:
            ok = OWNER_CONDITION.search(sql)
        if not ok:
            missing.append(f"{name} (called at {', '.join(where)})")
    return missing


@archive("Every owner-facing query names the owner")
def test_every_owner_facing_query_names_the_owner(tmp_path: Path) -> None:
    called = queries_called(*OWNER_FACING_CODE)
    assert {
        "owner_recording",
        "edit_owner_fields",
        "owner_transcript",
        "owner_journal",
        "recordings_of_owner",
        "recording_by_key",
        "accept_upload",
    } <= set(called)
    assert without_owner_condition(called) == [], (
        "queries an owner's request runs without `owner_id = $1`"
    )
    # A route that calls one of the operator's queries is caught.
    (tmp_path / "route.py").write_text('async def f(db):\n    await db.fetchrow("recording", 1)\n')
    assert without_owner_condition(queries_called(tmp_path)) == ["recording (called at route.py:2)"]
    # A search names the owner in each of its branches, not only around them: one
    # owner's search reads only their own transcripts and corrections.
    search = load_queries()["page_recordings"]
    branches = search[search.index("v.id IN (") :].split("UNION")
    assert len(branches) == 4  # titles, transcripts, corrections, summaries and topics
    for branch in branches:
        assert "owner_id = $1" in branch, branch


def runs_on_the_event_loop(call: Any) -> bool:
    """FastAPI awaits a coroutine function (or an async generator) where it is; anything
    else it runs in a worker thread, two thread trips per request."""
    if not inspect.isfunction(call):  # an instance, such as HTTPBearer: its __call__
        call = call.__call__
    return inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call)


def thread_bound(dependant: Any, seen: str) -> list[str]:
    """The endpoint and dependencies under `dependant` that FastAPI would run in a thread."""
    found = (
        []
        if runs_on_the_event_loop(dependant.call)
        else [f"{seen}: {getattr(dependant.call, '__qualname__', dependant.call)}"]
    )
    for sub in dependant.dependencies:
        found += thread_bound(sub, seen)
    return found


async def test_no_route_runs_its_endpoint_or_dependencies_in_a_thread(
    db: Database, config: Config
) -> None:
    app = create_app(db, config)
    routes = [
        c
        for r in app.routes
        if hasattr(r, "effective_route_contexts")
        for c in r.effective_route_contexts()
    ]  # the included routers' routes
    assert len(routes) > 20
    # A WebSocket route's context (the live face's) has no dependant: its endpoint is
    # checked itself.
    sockets = [r for r in routes if r.dependant is None]
    assert sockets and all(runs_on_the_event_loop(r.original_route.endpoint) for r in sockets)
    assert [x for r in routes if r.dependant for x in thread_bound(r.dependant, r.path)] == []

    # A plain `def` dependency is caught.
    def plain(request: Request) -> int:
        return 1

    router = APIRouter()
    router.add_api_route("/plain", lambda: None, dependencies=[Depends(plain)])
    [added] = router.routes
    assert [x.rsplit(".", 1)[-1] for x in thread_bound(added.dependant, "/plain")] == [
        "<lambda>",
        "plain",
    ]
