"""Process-wide counters and histograms of the runtime, in Prometheus' text format.

Small on purpose: counters and one histogram kind, labelled, no dependency."""

from __future__ import annotations

import bisect
from collections import defaultdict

Labels = tuple[tuple[str, str], ...]

STEP_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600)


def _labels(labels: dict[str, str]) -> Labels:
    return tuple(sorted(labels.items()))


def _render_labels(labels: Labels, extra: tuple[tuple[str, str], ...] = ()) -> str:
    items = labels + extra
    if not items:
        return ""
    text = ",".join(f'{k}="{v}"'.replace("\n", " ") for k, v in items)
    return "{" + text + "}"


class Registry:
    def __init__(self) -> None:
        self.help: dict[str, tuple[str, str]] = {}
        self.counters: dict[str, dict[Labels, float]] = defaultdict(lambda: defaultdict(float))
        self.histograms: dict[str, dict[Labels, list[float]]] = defaultdict(dict)
        self.buckets: dict[str, tuple[float, ...]] = {}

    def counter(self, name: str, help_text: str) -> None:
        self.help[name] = ("counter", help_text)

    def histogram(self, name: str, help_text: str, buckets: tuple[float, ...]) -> None:
        self.help[name] = ("histogram", help_text)
        self.buckets[name] = buckets

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        self.counters[name][_labels(labels)] += amount

    def observe(self, name: str, value: float, **labels: str) -> None:
        buckets = self.buckets[name]
        # Per label set: one count a bucket (cumulated when rendered), then sum, count.
        row = self.histograms[name].setdefault(_labels(labels), [0.0] * (len(buckets) + 3))
        row[bisect.bisect_left(buckets, value)] += 1
        row[-2] += value
        row[-1] += 1

    def render(self) -> str:
        lines: list[str] = []
        for name, (kind, help_text) in sorted(self.help.items()):
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
            if kind == "counter":
                # A counter never incremented still shows, at 0, so rates start from it.
                samples = sorted(self.counters[name].items()) or [((), 0.0)]
                for labels, value in samples:
                    lines.append(f"{name}{_render_labels(labels)} {value:g}")
                continue
            buckets = self.buckets[name]
            for labels, row in sorted(self.histograms[name].items()):
                running = 0.0
                for bound, count in zip((*buckets, float("inf")), row):
                    running += count
                    le = "+Inf" if bound == float("inf") else f"{bound:g}"
                    lines.append(
                        f"{name}_bucket{_render_labels(labels, (('le', le),))} {running:g}"
                    )
                lines.append(f"{name}_sum{_render_labels(labels)} {row[-2]:g}")
                lines.append(f"{name}_count{_render_labels(labels)} {row[-1]:g}")
        return "\n".join(lines) + "\n"


REGISTRY = Registry()
REGISTRY.counter("transcriber_claims_total", "Records claimed by this process's workers.")
REGISTRY.counter(
    "transcriber_lease_lost_total",
    "Writes refused because the claim's token was no longer on the record.",
)
REGISTRY.counter("transcriber_steps_total", "Steps finished, by step and outcome.")
REGISTRY.counter("transcriber_actor_restarts_total", "Crashed actors restarted, by actor.")
REGISTRY.histogram("transcriber_step_seconds", "Time a step ran, by step.", STEP_BUCKETS)
