"""The runtime's metrics: named by the product, in Prometheus' text format, escaped."""

from __future__ import annotations

import re

import trio

from actors import Child, RuntimeMetrics, Supervisor, Worker
from tests.helpers.memory_pipeline import TRANSCRIBED, pipeline, rig, until


def series(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("#")]


def test_histogram_buckets_are_cumulative() -> None:
    m = RuntimeMetrics("t")
    for v in (0.005, 2.0, 20.0):
        m.step_seconds.labels("x").observe(v)
    text = m.render()
    assert 't_step_seconds_bucket{le="0.01",step="x"} 1.0' in text
    assert 't_step_seconds_bucket{le="5.0",step="x"} 2.0' in text
    assert 't_step_seconds_bucket{le="+Inf",step="x"} 3.0' in text
    assert 't_step_seconds_count{step="x"} 3.0' in text
    assert 't_step_seconds_sum{step="x"} 22.005' in text


def test_a_label_value_with_a_quote_a_backslash_and_a_newline_is_escaped() -> None:
    """A step or actor name is the product's text: in the exposition a `"`, a `\\` or a
    newline in it must be escaped, or the scrape breaks (or says something else)."""
    m = RuntimeMetrics("t")
    m.actor_restarts.labels('say "hi"\\\nbye').inc()
    [line] = [line for line in series(m.render()) if line.startswith("t_actor_restarts_total")]
    assert line.rpartition(" ")[0] == 't_actor_restarts_total{actor="say \\"hi\\"\\\\\\nbye"}'


def test_the_names_carry_the_product_namespace_and_registries_are_apart() -> None:
    ours, theirs = RuntimeMetrics("ours"), RuntimeMetrics("ours")
    ours.claims.inc()
    text = ours.render()
    names = {re.split(r"[{ ]", line)[0] for line in series(text)}
    assert names == {"ours_claims_total", "ours_lease_lost_total"}
    assert "_created" not in text
    assert "ours_claims_total 1.0" in text and "ours_claims_total 0.0" in theirs.render()
    assert {n.split("_")[0] for n in re.findall(r"^# TYPE (\S+)", text, re.M)} == {"ours"}


async def test_lost_leases_and_restarts_show_at_zero_before_the_first(autojump_clock) -> None:
    """A series that first appears at 1 hides that first increase from `rate()`."""
    metrics = RuntimeMetrics("t")
    assert series(metrics.render()) == [
        "t_claims_total 0.0",
        *(f't_lease_lost_total{{write="{w}"}} 0.0' for w in ("commit", "progress", "fail", "stop")),
    ]
    sup = Supervisor(metrics=metrics)
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run, [Child("listener", trio.sleep_forever)])
        assert 't_actor_restarts_total{actor="listener"} 0.0' in series(metrics.render())
        nursery.cancel_scope.cancel()


async def test_a_worker_counts_into_the_metrics_it_is_given(autojump_clock) -> None:
    metrics = RuntimeMetrics("prod")
    queue, wakeup, [spare] = rig(pipeline())
    worker = Worker("w", queue, queue.steps, wakeup, metrics)
    rid = queue.add()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker.run)
        await until(lambda: queue.records[rid].milestone == TRANSCRIBED)
        wakeup.close()
    text = metrics.render()
    assert "prod_claims_total 2.0" in text
    assert 'prod_steps_total{outcome="done",step="normalize"} 1.0' in text
    assert 'prod_step_seconds_count{step="recognize"} 1.0' in text
    assert "actors_claims_total 0.0" in spare.metrics.render()  # its own, never used
