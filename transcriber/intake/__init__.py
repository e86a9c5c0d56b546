"""One intake for every way a recording comes in — the API's upload, the owner's page,
the OpenAI-compatible endpoint, the command line (and next, live sessions and watched
folders): the owner's room (quota of bytes and hours, the disk's reserve), the bytes
durable in the store, the dedupe fingerprint and the Idempotency-Key, the commit of the
record with its `accepted` event. A door only turns its request into one `accept` call:
a `Fill` that writes the bytes into a `Sink` and says what they are (`Described`), and
maps the `Refused` it gets back to its own answers.

What stays with a door is what belongs to its way in: HTTP's uploads at once per owner
(`http.quotas.UploadSlots`, a count of request bodies open in this process), parsing its
body, its own size checks before a byte is read, its log events."""

from transcriber.intake.accepting import Accepted, Fill, accept
from transcriber.intake.local_files import accept_file
from transcriber.intake.refusals import (
    Conflicted,
    KeyReused,
    NoRoom,
    Refused,
    TooLarge,
    TooLong,
    Unconfirmed,
)
from transcriber.intake.room import Limits
from transcriber.intake.sink import Described, Sink

__all__ = [
    "Accepted",
    "Conflicted",
    "Described",
    "Fill",
    "KeyReused",
    "Limits",
    "NoRoom",
    "Refused",
    "Sink",
    "TooLarge",
    "TooLong",
    "Unconfirmed",
    "accept",
    "accept_file",
]
