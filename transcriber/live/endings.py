"""Why a live session ended: the `reason` of its `live_ended` journal event and its
`live_sessions.end_reason` (docs/api.md, "Why a session ended"). One word each, so an
owner reading the record's journal and an operator reading `transcriber journal` tell a
client's goodbye from a lost connection, a bound from a quota, a daemon's death from a
daemon's shutdown.

`LOST` and `DELETED` never reach a record: a daemon fenced out of its session (its lease
taken over) can write nothing more to it — the record then says `TAKEN_OVER`, written by
the daemon that ended it — and a deleted record has no journal left to end. They are
what the serving daemon logs and tells its client."""

from __future__ import annotations

CLOSED = "closed"
"""The client closed the socket with a close frame (the SDK's `close()`)."""
DROPPED = "dropped"
"""The connection was lost without a close frame, or sending to the client failed."""
IDLE = "idle"
"""The client sent nothing for the idle bound (`session_idle`)."""
TOO_LONG = "too_long"
"""The session reached TRANSCRIBER_MAX_DURATION_S of audio (`session_too_long`)."""
QUOTA = "quota"
"""The session reached the room the owner's quota had left (`insufficient_quota`)."""
REVOKED = "revoked"
"""The token or page session the session was opened with stopped working (revoked,
rotated, signed out) mid-session (`invalid_api_key`)."""
STORAGE = "storage_failed"
"""The store refused the session's audio (`storage_unavailable`)."""
SHUTDOWN = "shutdown"
"""The daemon serving the session stopped (SIGTERM, or its server cancelled)."""
TAKEN_OVER = "taken_over"
"""Another daemon's sweep ended it: its daemon died, or lost the database for a whole
lease."""
LOST = "lost"
"""Socket side only: this daemon was fenced out (its lease taken over)."""
DELETED = "deleted"
"""Socket side only: the owner deleted the session's record while it ran."""

RECORDED = (CLOSED, DROPPED, IDLE, TOO_LONG, QUOTA, REVOKED, STORAGE, SHUTDOWN, TAKEN_OVER)
"""Every reason a record's `live_ended` can say."""
