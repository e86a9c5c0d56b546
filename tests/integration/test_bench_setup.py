"""`transcriber bench`'s setup runs under its own statement bound, not the service's: a
slow machine (here: a service bound far shorter than the seeding of the finished
history takes) still gets the claim-plan figures."""

from __future__ import annotations

import pytest

from transcriber.bench import claim_plans, fresh_databases
from transcriber.bench.fresh_databases import ENV_URL, Server


async def test_bench_setup_outlasts_a_tiny_service_statement_bound(
    pg_admin_url: str, aio_loop: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_URL, pg_admin_url)
    # 0.2 s: enough to connect, and the seeding below takes several times it.
    monkeypatch.setenv("TRANSCRIBER_DATABASE_TIMEOUT_S", "0.2")
    monkeypatch.setattr(claim_plans, "FINISHED_ROWS", 150_000)
    monkeypatch.setattr(claim_plans, "PLAN_CLAIMS", 5)
    assert fresh_databases.service_timeout_s() == 0.2
    server = Server()
    try:
        res = await claim_plans.plan_phase(server, "finished", claim_plans.finished_history)
    finally:
        await server.drop_databases()
    assert res["condition"].startswith("150,000 finished")
    assert res["uses_claim_index"] and res["claims"]["n"] == 5
