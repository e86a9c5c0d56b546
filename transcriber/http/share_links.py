"""A read-only link to one record, as the faces that make it (the API, the record page's
form) and the face that opens it (the page's share view, `/s/{secret}`) agree on it:
its address and how long it may last. The link's secret is its capability
(`transcriber.records.shares`)."""

import datetime as dt

from fastapi import Request

MAX_DAYS = 3650.0
"""The longest a link may last, in days."""
SHARE_PREFIX = "/s/"


def link_of(request: Request, secret: str) -> str:
    return str(request.base_url).rstrip("/") + SHARE_PREFIX + secret


def expiry(days: float | None) -> dt.datetime | None:
    return None if days is None else dt.datetime.now(dt.UTC) + dt.timedelta(days=days)
