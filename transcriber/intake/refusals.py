"""Why the intake refuses a recording: typed, with the words for whoever sent it. The
doors map them to their own answers (HTTP: 409, 413, 422, 503, 507 with Retry-After); a
refused recording leaves nothing behind in the store or the database."""

from __future__ import annotations


class Refused(Exception):
    """The recording is not accepted. `message` is for the sender; `retry_after`, when
    set, is how many seconds later the same request may succeed."""

    def __init__(self, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


class TooLarge(Refused):
    """The recording passes the size limit of its door."""


class NoRoom(Refused):
    """The owner's quota (bytes stored, hours of audio) or the disk's reserve leaves no
    room for the recording."""


class TooLong(NoRoom):
    """The recording's container says it is longer than the owner's quota of hours of
    audio has left."""


class KeyReused(Refused):
    """The owner's Idempotency-Key was used before by a different request."""


class Conflicted(Refused):
    """The same request's first record kept being deleted while this one came in: the
    sender may send it again."""


class Unconfirmed(Refused):
    """The database did not confirm the record in time: it may or may not exist (the
    file stays; the startup sweep decides)."""
