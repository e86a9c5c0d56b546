"""A domain-free actor runtime for durable pipelines.

It knows queues, claims, leases and steps; it knows nothing about audio or HTTP.
The domain supplies a `Queue` (the durable store) and a `StepTable` (what to run at
each milestone); the runtime supplies worker actors, a supervisor and wake-ups.
"""

from actors.steps import Backoff, Lease, RunLimit, Step, StepTable, StopRecord
from actors.queue import Claim, FailOutcome, Job, Queue, ResultRefused
from actors.wakeup import Wakeup
from actors.worker import Worker
from actors.supervisor import Supervisor

__all__ = [
    "Backoff",
    "Claim",
    "FailOutcome",
    "Job",
    "Lease",
    "Queue",
    "ResultRefused",
    "RunLimit",
    "Step",
    "StepTable",
    "StopRecord",
    "Supervisor",
    "Wakeup",
    "Worker",
]
