"""The service itself: health for load balancers, metrics for Prometheus."""

import trio
from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from transcriber.db import describe
from transcriber.http.deps import Db
from transcriber.http.models import Health
from transcriber.metrics import render_metrics

HEALTH_TIMEOUT_S = 5.0

router = APIRouter()


@router.get("/healthz", summary="Is the database reachable", response_model=None,
            responses={200: {"model": Health}, 503: {"model": Health}})
async def healthz(db: Db) -> JSONResponse:
    try:
        with trio.fail_after(HEALTH_TIMEOUT_S):
            await db.fetchval("health")
    except Exception as e:  # noqa: BLE001 - whatever fails, the answer is "unavailable"
        return JSONResponse({"status": "unavailable", "error": describe(e)},
                            status_code=503)
    return JSONResponse({"status": "ok"})


@router.get("/metrics", summary="Prometheus metrics", response_model=None,
            responses={200: {"content": {"text/plain": {}}}})
async def metrics(db: Db) -> Response:
    return Response(await render_metrics(db),
                    media_type="text/plain; version=0.0.4; charset=utf-8")
