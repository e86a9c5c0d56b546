"""The runtime's counters and histograms, in Prometheus' text format (prometheus_client).

The runtime names no product: the product gives the namespace (the metric names'
prefix) and hands the same `RuntimeMetrics` to its workers and supervisors. Each one
has a registry of its own, not prometheus_client's global one."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

FencedWrite = Literal["commit", "progress", "fail", "stop"]
"""The writes a lost lease can refuse (`lease_lost`'s `write` label)."""
FENCED_WRITES: tuple[FencedWrite, ...] = get_args(FencedWrite)

STEP_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600)


class _Unstamped(Collector):
    """The registry's metrics without the `_created` series prometheus_client adds to
    counters and histograms (a process start time per label set, which says nothing
    here); switching them off in prometheus_client is process-wide."""

    def __init__(self, registry: CollectorRegistry):
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        for metric in self._registry.collect():
            created = metric.name + "_created"
            metric.samples = [s for s in metric.samples if s.name != created]
            yield metric


class RuntimeMetrics:
    """Claims, lost leases, steps (by step and outcome), their times, and restarts of
    crashed actors, as `<namespace>_claims_total` and so on."""

    def __init__(self, namespace: str = "actors"):
        self.namespace = namespace
        self.registry = CollectorRegistry(auto_describe=True)
        self._exposed = _Unstamped(self.registry)
        # Registered in name order, as the text shows them.
        self.actor_restarts = Counter(
            "actor_restarts",
            "Crashed actors restarted, by actor.",
            ["actor"],
            namespace=namespace,
            registry=self.registry,
        )
        self.claims = Counter(
            "claims",
            "Records claimed by this process's workers.",
            namespace=namespace,
            registry=self.registry,
        )
        self.lease_lost = Counter(
            "lease_lost",
            "Writes refused because the claim's token was no longer on the record.",
            ["write"],
            namespace=namespace,
            registry=self.registry,
        )
        for write in FENCED_WRITES:  # shown at 0 from the start, so rates start from it
            self.lease_lost.labels(write)
        self.step_seconds = Histogram(
            "step_seconds",
            "Time a step ran, by step.",
            ["step"],
            buckets=STEP_BUCKETS,
            namespace=namespace,
            registry=self.registry,
        )
        self.steps = Counter(
            "steps",
            "Steps finished, by step and outcome.",
            ["step", "outcome"],
            namespace=namespace,
            registry=self.registry,
        )
        self._ended: dict[tuple[str, str], tuple[Histogram, Counter]] = {}

    def step_ended(self, step: str, outcome: str, seconds: float) -> None:
        """A step ran `seconds` and came to `outcome`: its time and its count. The label
        sets are looked up once (a lookup costs twice the update, on every transition)."""
        children = self._ended.get((step, outcome))
        if children is None:
            children = (self.step_seconds.labels(step), self.steps.labels(step, outcome))
            self._ended[(step, outcome)] = children
        children[0].observe(seconds)
        children[1].inc()

    def render(self) -> str:
        """The exposition text (Prometheus' text format 0.0.4)."""
        return generate_latest(self._exposed).decode()
