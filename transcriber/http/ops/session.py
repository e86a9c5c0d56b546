"""Signing in to the operator's screen (/ops): the owner's page's flow
(transcriber.http.sessions) with an operator's token and a session of kind 'operator' —
its own cookie, scoped to /ops (so never `__Host-`, which needs the whole site: the
same name over HTTPS, Secure there), HttpOnly, SameSite=Strict; the anti-forgery token
and origin checks on every change.

The two kinds never cross: an owner's session secret finds no operator session (and an
operator's none of an owner's, see sql/page.sql `page_session`), whichever cookie it
is sent in; an operator's token is no owner's API token.
"""

from __future__ import annotations

from typing import Annotated

import attrs
from fastapi import Depends, Request

from transcriber.db.database import Database
from transcriber.http.deps import Db
from transcriber.http.sessions import SessionKind
from transcriber.operators import operator_of_token
from transcriber.records.page_sessions import (
    end_operator_session,
    live_operator_session,
    start_operator_session,
)

COOKIE = "transcriber_ops_session"
PREFIX = "/ops"
SIGNIN_PATH = "/ops/signin"


@attrs.frozen
class OpsSession:
    operator: int
    name: str
    csrf: str
    secret_hash: bytes


async def _start(
    db: Database, token: str, hashed: bytes, csrf: str, lifetime_s: float
) -> str | None:
    signed = await operator_of_token(db, token)
    if signed is None:
        return None
    await start_operator_session(db, signed.id, hashed, csrf, lifetime_s)
    return signed.name


async def _find(db: Database, hashed: bytes) -> OpsSession | None:
    live = await live_operator_session(db, hashed)
    return None if live is None else OpsSession(live.operator, live.name, live.csrf, hashed)


async def _end(db: Database, session: OpsSession) -> None:
    await end_operator_session(db, session.operator, session.secret_hash)


OPERATOR: SessionKind[OpsSession] = SessionKind(
    cookie=COOKIE,
    https_cookie=COOKIE,
    path=PREFIX,
    home=PREFIX,
    signin_path=SIGNIN_PATH,
    start=_start,
    find=_find,
    end=_end,
)


# Dependencies as plain coroutine functions of their own (FastAPI awaits them in place).
async def ops_session(request: Request, db: Db) -> OpsSession:
    """The signed-in operator's session (`SessionKind.required`)."""
    return await OPERATOR.required(request, db)


async def changing_session(request: Request, db: Db) -> OpsSession:
    """The session of a change sent by the screen's script (`SessionKind.changing`)."""
    return await OPERATOR.changing(request, db)


OperatorSession = Annotated[OpsSession, Depends(ops_session)]
ChangingOperatorSession = Annotated[OpsSession, Depends(changing_session)]
