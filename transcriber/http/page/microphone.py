"""The page's microphone at `/microphone`: the Record button. The page's script
(`static/microphone.js`) takes the microphone through `getUserMedia`, turns it into
24 kHz 16-bit PCM in an AudioWorklet (`static/microphone-worklet.js`, which resamples),
and speaks OpenAI's realtime transcription protocol to the live face's socket
(`/v1/realtime?intent=transcription`) with the page's own session cookie — the socket
checks the cookie and that the page is this site's (`transcriber.http.live.session`).
Captions come as the turns are recognized; at Stop the page goes to the session's
record (or the list, where it appears), whose final transcript the pipeline makes.

Nothing of the audio passes through this module: it serves the screen and its words."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from transcriber.http.i18n import N_
from transcriber.http.page.html import html, lang_of
from transcriber.http.page.session import Session

router = APIRouter(include_in_schema=False)

PATH = "/microphone"
SOCKET = "/v1/realtime?intent=transcription"
"""The live face's socket, on this very origin (the page's cookie goes with it)."""

WORDS = {
    "no_media": N_(
        "This browser offers no microphone to this page. Microphones are given only to "
        "pages opened over HTTPS or at this computer's own address (localhost)."
    ),
    "no_worklet": N_("This browser cannot record here: it has no AudioWorklet."),
    "refused_mic": N_(
        "The microphone was refused. Allow this site to use it (the icon beside the "
        "address, or the browser's site settings), then press Record again."
    ),
    "no_mic": N_("No microphone was found. Connect one, then press Record again."),
    "busy_mic": N_(
        "The microphone could not be opened: another program may be using it. "
        "Close it, then press Record again."
    ),
    "asking": N_("Asking for the microphone…"),
    "connecting": N_("Connecting…"),
    "recording": N_("Recording. Speak; captions appear below as each phrase ends."),
    "recording_vad": N_("Recording. Speak; captions appear below as you speak."),
    "finishing": N_("Stopping: the last words are being transcribed…"),
    "leaving": N_("Stopped. Opening the recording…"),
    "refused_socket": N_(
        "The service refused the live session: you may have been signed out, or you "
        "have too many live sessions open at once. Reload the page and try again."
    ),
    "broken": N_(
        "The connection to the service broke off. What was recorded until then is kept "
        "among your recordings."
    ),
    "too_long": N_("The recording reached the longest a session may be; it has stopped."),
    "quota": N_(
        "The recording reached the room left in your account; it has stopped, and what "
        "was recorded is kept."
    ),
    "shutdown": N_("The service is restarting; the recording has stopped and is kept."),
    "revoked": N_(
        "You were signed out (or your token was revoked); the recording has stopped and is kept."
    ),
    "deleted": N_("This recording was deleted while it was being recorded; nothing is kept."),
    "idle": N_("The service heard nothing for minutes; the recording has stopped and is kept."),
    "storage": N_(
        "The service could not store more of the recording; it has stopped, and what was "
        "stored until then is kept."
    ),
    "lost": N_(
        "The service lost hold of the recording; it has stopped, and what was recorded is "
        "kept and transcribed."
    ),
    "live_stopped": N_(
        "Captions have stopped: the service is busy. The recording goes on and is "
        "transcribed when you stop."
    ),
    "service_said": N_("The service refused something: {why}"),
    "turn_failed": N_(
        "(this phrase could not be transcribed live; the final transcript will have it)"
    ),
}
"""The script's own texts, in the page's language (a JSON block of the template)."""


@router.get(PATH)
async def microphone_page(request: Request, session: Session) -> HTMLResponse:
    lang = lang_of(request)
    return html(
        request,
        "microphone.html",
        csrf=session.csrf,
        socket=SOCKET,
        microphone_words={key: lang.gettext(text) for key, text in WORDS.items()},
    )
