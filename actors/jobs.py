"""The values a claim produces: what the queue hands a worker, and a step reads."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import attrs


@attrs.frozen
class Claim:
    """What a claim returns: the record's id and this claim's unique token, nothing else."""

    id: Hashable
    token: Hashable


@attrs.frozen
class Job:
    """A claimed record as the worker read it right after the claim."""

    claim: Claim
    milestone: str
    attempt: int
    """This attempt's number: claims of the record since it reached its milestone (or
    was resumed), this one included."""
    lease_remaining_s: float
    """Seconds until the lease expires, measured by the queue's clock at the read."""
    in_milestone_s: float
    """Seconds since the record reached its milestone."""
    inputs: Mapping[str, Any] = attrs.field(factory=dict)
    renewals: int = 0
    """Lease renewals the holder made before its write (journaled with the commit)."""
