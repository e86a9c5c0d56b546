"""A domain-free actor runtime for durable pipelines.

It knows queues, claims, leases and steps; it knows nothing about audio or HTTP, and
names nothing of the product that uses it (the product gives its metrics' namespace
to `RuntimeMetrics` and its logger's name to `actors.log.use_logger`).
The domain supplies a `Queue` (the durable store) and a `StepTable` (what to run at
each milestone); the runtime supplies worker actors, a supervisor and wake-ups.

The public names are the ones below, imported from `actors` itself. Three submodules
are public on their own, apart from the runtime: `actors.log` (the logfmt event log),
`actors.sdnotify` (systemd's readiness and watchdog) and `actors.testing` (an in-memory
queue for tests).
"""

from actors.jobs import Claim, Job
from actors.log import describe
from actors.metrics import RuntimeMetrics
from actors.queue import FailOutcome, Queue, ResultRefused
from actors.steps import Backoff, Lease, Progress, RunLimit, Step, StepFn, StepTable, StopRecord
from actors.supervisor import Child, Supervisor
from actors.wakeup import Wakeup
from actors.worker import RELEASE_TIMEOUT_S, Worker

__all__ = [
    "RELEASE_TIMEOUT_S",
    "Backoff",
    "Child",
    "Claim",
    "FailOutcome",
    "Job",
    "Lease",
    "Progress",
    "Queue",
    "ResultRefused",
    "RunLimit",
    "RuntimeMetrics",
    "Step",
    "StepFn",
    "StepTable",
    "StopRecord",
    "Supervisor",
    "Wakeup",
    "Worker",
    "describe",
]
