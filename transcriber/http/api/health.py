"""The service itself: health for load balancers, metrics for Prometheus."""

import hmac
import logging

import trio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from actors import describe
from actors.log import event
from transcriber.audio.devices import recognizer_info
from transcriber.http.api.shapes import Health
from transcriber.http.deps import Db, Settings
from transcriber.http.errors import ApiError, Error
from transcriber.http.middleware import is_loopback, loopback_host
from transcriber.pipeline.operator import check_database
from transcriber.pipeline.prometheus import render_metrics

HEALTH_TIMEOUT_S = 5.0
HEALTH_DOWN = "the database does not answer; the service log has the cause"

router = APIRouter()


@router.get(
    "/healthz",
    summary="Is the database reachable; what recognizes here",
    response_model=None,
    responses={200: {"model": Health}, 503: {"model": Health}},
)
async def healthz(db: Db, config: Settings) -> JSONResponse:
    try:
        with trio.fail_after(HEALTH_TIMEOUT_S):
            await check_database(db)
    except Exception as e:  # whatever fails, the answer is "unavailable"
        # The cause (a host, a database name) is the operator's: in the log only.
        event(logging.WARNING, "health_unavailable", error=describe(e, with_type=False))
        return JSONResponse(
            {"status": "unavailable", "error": HEALTH_DOWN, "recognizer": recognizer_info(config)},
            status_code=503,
        )
    return JSONResponse({"status": "ok", "recognizer": recognizer_info(config)})


def operator_token_given(request: Request, token: str | None) -> bool:
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return (
        token is not None
        and scheme.lower() == "bearer"
        and hmac.compare_digest(given.strip().encode(), token.encode())
    )


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_model=None,
    description="Counts across all owners, for the operator: served to loopback, "
    "or with `Authorization: Bearer <TRANSCRIBER_METRICS_TOKEN>`.",
    responses={200: {"content": {"text/plain": {}}}, 403: {"model": Error}},
)
async def metrics(request: Request, db: Db, config: Settings) -> Response:
    if not (
        # Loopback by both ends: a page elsewhere that points its own name at
        # 127.0.0.1 (DNS rebinding) reaches this host's loopback, but says its own name.
        (is_loopback(request.client and request.client.host) and loopback_host(request))
        or operator_token_given(request, config.metrics_token)
    ):
        raise ApiError(403, "metrics are served to this host, or with the operator's metrics token")
    return Response(
        await render_metrics(db, recognizer_info(config)),
        media_type="text/plain; version=0.0.4; charset=utf-8",
    )
