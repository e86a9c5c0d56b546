"""What one owner may send at once: uploads in progress (429 beyond). The owner's quota
(bytes kept, hours of audio) and the disk's room are the intake's (transcriber.intake);
this count stays with HTTP because it bounds request bodies held open in this process —
connections, not recordings: the command line sends one file at a time, and a count in
memory says nothing about the other hosts."""

import contextlib
from collections.abc import Iterator

import attrs

from transcriber.http.errors import ApiError

BUSY_RETRY_AFTER_S = 5


@attrs.define
class UploadSlots:
    """Uploads in progress per owner, at most `per_owner` each."""

    per_owner: int
    taken: dict[int, int] = attrs.field(factory=dict)

    @contextlib.contextmanager
    def take(self, owner: int) -> Iterator[None]:
        """One slot of `owner` for the block; 429 when they are all taken."""
        if self.taken.get(owner, 0) >= self.per_owner:
            raise ApiError(
                429,
                f"{self.per_owner} uploads of yours are in progress "
                "already; retry when one has ended",
                {"Retry-After": str(BUSY_RETRY_AFTER_S)},
            )
        self.taken[owner] = self.taken.get(owner, 0) + 1
        try:
            yield
        finally:
            self.taken[owner] -= 1
            if not self.taken[owner]:
                del self.taken[owner]
