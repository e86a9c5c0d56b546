"""The record page's share forms: a new read-only link (shown once, after a redirect,
`new_share`) and a link revoked. The view a link opens is `shared_view`."""

from __future__ import annotations

import math

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from transcriber.http import i18n
from transcriber.http.deps import Db
from transcriber.http.owned_cards import (
    parse_id,
)
from transcriber.http.page.html import (
    html,
    lang_of,
    mine,
    not_found_page,
    record_path,
)
from transcriber.http.page.new_share import carry_new_share
from transcriber.http.page.record import record_context
from transcriber.http.page.session import (
    CSRF_FIELD,
    Session,
    check_csrf,
)
from transcriber.http.share_links import MAX_DAYS, expiry
from transcriber.http.uploads import check_text
from transcriber.records.shares import (
    NOTE_MAX,
    add_share,
    revoke_share,
)

router = APIRouter(include_in_schema=False)


def share_errors(lang: i18n.Lang, note: str, days_text: str) -> tuple[dict[str, str], float | None]:
    """Each refused field of the share form (`share_note`, `share_days`) with its
    reason in the reader's language, and the days asked for (None: until revoked). The
    bounds are the API's (`NewShare`): a note of at most NOTE_MAX characters that
    `check_text` takes, days more than 0 and at most MAX_DAYS, empty for none."""
    _ = lang.gettext
    errors: dict[str, str] = {}
    try:
        check_text(note, "the note", NOTE_MAX)
    except ValueError:
        errors["share_note"] = (
            _("The note is longer than %(limit)d characters") % {"limit": NOTE_MAX}
            if len(note) > NOTE_MAX
            else _("The note contains characters that cannot be stored")
        )
    days: float | None = None
    if days_text:
        try:
            days = float(days_text)
        except ValueError:
            days = math.nan
        if not 0 < days <= MAX_DAYS:  # NaN and infinities fail this too
            errors["share_days"] = _(
                "The days a link lasts are a number more than 0 and at most %(max)d; "
                "leave it empty for a link that lasts until revoked"
            ) % {"max": MAX_DAYS}
            days = None
    return errors, days


@router.post("/recordings/{recording_id}/shares", include_in_schema=False)
async def page_make_share(
    request: Request, db: Db, session: Session, recording_id: str
) -> Response:
    """A new link from the record page's form (`note`, `days`: empty for none), then a
    redirect (303) to the record page, which shows the new link this once: reloading
    that page reads it again and makes no second link. A refused note or number of days
    makes no link: the record page again (422), the form with its reason."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    card = await mine(db, session.owner, recording_id)
    if card is None:
        return not_found_page(request, session)
    values = {k: str(form.get(k, "")).strip() for k in ("note", "days")}
    errors, days = share_errors(lang_of(request), values["note"], values["days"])
    if errors:
        context = await record_context(db, session.owner, card, session.csrf)
        shown = {**context, "errors": errors, "share_values": values}
        return html(request, "record.html", 422, **shown)
    made = await add_share(
        db, session.owner, card["id"], note=values["note"], expires_at=expiry(days)
    )
    if made is None:
        return not_found_page(request, session)
    response = RedirectResponse(f"{record_path(card['id'])}#shares", status_code=303)
    carry_new_share(response, request, card["id"], made[0])
    return response


@router.post("/recordings/{recording_id}/shares/{share_id}/revoke", include_in_schema=False)
async def page_revoke(
    request: Request, db: Db, session: Session, recording_id: str, share_id: str
) -> Response:
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    rid, sid = parse_id(recording_id), parse_id(share_id)
    if rid is None or sid is None or not await revoke_share(db, session.owner, rid, sid):
        return not_found_page(request, session)
    return RedirectResponse(f"/recordings/{rid}#shares", status_code=303)
