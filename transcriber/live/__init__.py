"""Live sessions as records (DESIGN: "Live sessions are records from their first
second"), below HTTP: `sessions` has a session's record, its lease, its live draft, its
end and the daemons' sweep of sessions whose daemon died; `audio` its audio in the store
as it arrives and completed into one WAV. The realtime socket (transcriber.http.live)
is one client of it."""

from transcriber.live import endings
from transcriber.live.sessions import LeaseLost, LiveRecord, finish_expired, keep_finishing, start

__all__ = ["LeaseLost", "LiveRecord", "endings", "finish_expired", "keep_finishing", "start"]
