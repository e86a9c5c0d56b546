"""A live session's state, without I/O: what the client configured (`session.update`,
turns committed by the client or by the server's voice activity detection), the
accounting of the turn being spoken (`input_audio_buffer.append`), its commit and its
clearing, and the bounds that keep a session's memory and pace fixed whatever the
client sends (the audio itself goes to the turn's stream, `transcriber.http.live.stream`).

The protocol's audio is OpenAI's `audio/pcm`: 16-bit little-endian mono at 24 kHz."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import attrs

from transcriber.audio.agreement import Agreement
from transcriber.audio.voice import ServerVad
from transcriber.http.live.events import new_id
from transcriber.languages import UnknownLanguage, language_hint
from transcriber.options import RecognitionOptions

RATE = 24_000
BYTES_PER_S = RATE * 2
MIN_TURN_S = 0.1
"""OpenAI refuses a commit of less than 100 ms of audio; so does this."""


class Refused(Exception):
    """A client event refused: answered with an `error` event, the session goes on."""

    def __init__(self, code: str, message: str, param: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.param = param


@attrs.frozen
class Pace:
    """How a policy follows a turn."""

    step_s: float = 1.0
    """New audio between two passes while the passes keep up (a pass takes less)."""
    busy_step_s: float = 1.0
    """The step after a pass that took longer than `step_s`: a session does not pass
    back to back, whatever the machine gives it."""
    context_pad_s: float | None = None
    """The padding after the buffer the encoder sees (None: Whisper's 30 s window;
    `transcriber.audio.live`)."""
    margin_s: float | None = None
    """None: a word is confirmed when two passes agree on it (LocalAgreement-2); else by
    one pass when it ends this long before the audio heard
    (`transcriber.audio.agreement.Agreement.insert_heard`)."""
    passes: bool = True
    """False: no pass before the turn ends (`whole`)."""
    trim_s: float = 12.0
    """The buffer is trimmed at a confirmed sentence end once longer than this,"""
    clause_s: float | None = None
    """at a confirmed clause mark (a comma) once longer than this (None: never),"""
    word_s: float | None = None
    """and at the last confirmed word once longer than this (None: near Whisper's
    window; `transcriber.audio.agreement.Agreement.trim_at`),"""
    keep_s: float = 0.0
    """each cut leaving at least this much audio after it."""

    def agreement(self) -> Agreement:
        """A turn's agreement, trimmed as the policy says."""
        return Agreement(
            trim_s=self.trim_s, clause_s=self.clause_s, word_s=self.word_s, keep_s=self.keep_s
        )


AGREEMENT = Pace(step_s=0.5, busy_step_s=1.0, context_pad_s=2.0)
"""The chosen policy's pace (`agreement`)."""


def _trim(
    trim_s: float, clause_s: float | None = None, word_s: float | None = None, keep_s: float = 0.0
) -> Pace:
    """`agreement`'s pace, its buffer trimmed otherwise."""
    return attrs.evolve(AGREEMENT, trim_s=trim_s, clause_s=clause_s, word_s=word_s, keep_s=keep_s)


POLICIES: dict[str, Pace] = {
    "agreement": AGREEMENT,
    "whole": Pace(passes=False),
    # The options measured against the chosen one (docs/benchmarks/live.md).
    "la2-window": Pace(step_s=1.0, busy_step_s=1.0),
    "la2-window-0.5": Pace(step_s=0.5, busy_step_s=1.0),
    "la2-short-1.0": Pace(step_s=1.0, busy_step_s=1.0, context_pad_s=2.0),
    "margin": Pace(step_s=0.5, busy_step_s=1.0, context_pad_s=2.0, margin_s=0.5),
    # `agreement` trimmed earlier: at sentence ends past N s; `-clause`, at commas too
    # past N s; `-word-M`, at any confirmed word past M s; `-keep`, each cut leaving a
    # second of audio after it (docs/benchmarks/live.md).
    "trim-8": _trim(8.0),
    "trim-6": _trim(6.0),
    "trim-4": _trim(4.0),
    "trim-6-clause": _trim(6.0, clause_s=6.0),
    "trim-4-clause": _trim(4.0, clause_s=4.0),
    "trim-6-word-10": _trim(6.0, clause_s=6.0, word_s=10.0),
    "trim-8-keep": _trim(8.0, keep_s=1.0),
    "trim-6-keep": _trim(6.0, keep_s=1.0),
    "trim-6-clause-keep": _trim(6.0, clause_s=6.0, keep_s=1.0),
    "trim-4-clause-keep": _trim(4.0, clause_s=4.0, keep_s=1.0),
}


@attrs.frozen
class LiveLimits:
    """The bounds of one session: a turn's audio (`max_turn_s`: the buffer a commit
    recognizes at once), the whole session's audio (`max_session_s`, kept on disk, not
    in memory), one append's decoded audio, the silence of its client."""

    max_turn_s: float = 120.0
    max_session_s: float = 4 * 3600.0
    max_append_bytes: int = 1024 * 1024
    owner_sessions: int = 2
    """Sessions of one owner at once; another is refused at the upgrade (429)."""
    idle_s: float = 300.0
    """A session that sends nothing for this long is ended (and kept): a client that
    went away without the connection saying so holds no socket for ever."""
    burst_s: float = 3.0
    """Audio a client may send ahead of real time (after a network stall, say); past it
    an append is refused (`rate_limit_exceeded`): a client that streams a file as fast
    as it can would take the CPU of every other session."""
    max_sessions: int = 2
    """Live sessions of the whole service at once (TRANSCRIBER_LIVE_MAX_SESSIONS);
    another is refused at the upgrade (429)."""
    policy: str = attrs.field(default="agreement", validator=attrs.validators.in_(POLICIES))
    """A name of `POLICIES`: `agreement` (the chosen one), `whole` (one pass when the
    turn ends), the others the options bench-live measures against it."""
    step_s: float | None = None
    """New audio between two passes over a turn's buffer: None, the policy's."""
    slow_step_s: float = 3.0
    """The step of a session that fell behind (fewer passes, each over more audio)."""
    behind_s: float = 6.0
    """Audio not yet passed over after a pass: past it the session takes slow steps."""
    give_up_s: float = 15.0
    """Past it, with slow steps, the session stops its live text (an `error` event) and
    goes on as a recording only: never a backlog that grows without bound."""

    @property
    def pace(self) -> Pace:
        chosen = POLICIES[self.policy]
        if self.step_s is None:
            return chosen
        return attrs.evolve(chosen, step_s=self.step_s, busy_step_s=self.step_s)


@attrs.define
class Turns:
    limits: LiveLimits
    language: str | None = None
    prompt: str | None = None
    model: str = "whisper-1"
    vad: ServerVad | None = None
    """`turn_detection`: None, the client commits each turn."""
    turn_bytes: int = 0
    """Audio of the turn being spoken (since its first append, or speech start)."""
    item: str | None = None
    """The item id of the turn being spoken, given at its first audio: deltas name it
    before it is committed."""
    session_bytes: int = 0
    last_item: str | None = None
    credit_s: float | None = None
    """Seconds of audio the client may still send ahead of real time."""
    credit_at: float = 0.0

    def described(self) -> dict[str, Any]:
        """The session's effective configuration, as `session.created`/`updated` say it
        (the SDK's `RealtimeTranscriptionSessionCreateRequest`). Turns are the
        client's commits (`turn_detection` null) or the server's VAD's."""
        return {
            "type": "transcription",
            "audio": {
                "input": {
                    "format": {"type": "audio/pcm", "rate": RATE},
                    "transcription": {
                        "model": self.model,
                        "language": self.language,
                        "prompt": self.prompt,
                    },
                    "turn_detection": self.vad.described() if self.vad else None,
                    "noise_reduction": None,
                }
            },
        }

    def update(self, session: Any) -> None:
        """Apply a `session.update`'s `session`, all of it or nothing."""
        if not isinstance(session, dict) or session.get("type") != "transcription":
            raise Refused(
                "invalid_value", "this endpoint takes transcription sessions only", "session.type"
            )
        audio = _object(session, "audio", "session.audio")
        given = _object(audio, "input", "session.audio.input")
        fmt = given.get("format")
        if fmt is not None and (
            not isinstance(fmt, dict)
            or fmt.get("type") != "audio/pcm"
            or fmt.get("rate", RATE) != RATE
        ):
            raise Refused(
                "invalid_value",
                "the input audio format must be audio/pcm at 24000 Hz",
                "session.audio.input.format",
            )
        vad = self.vad
        if "turn_detection" in given:
            vad = _vad(given["turn_detection"])
        language, prompt, model = self.language, self.prompt, self.model
        if "transcription" in given:
            asked = _object(given, "transcription", "session.audio.input.transcription")
            where = "session.audio.input.transcription"
            if "language" in asked:
                try:
                    language = language_hint(_text(asked["language"], f"{where}.language"))
                except UnknownLanguage as e:
                    raise Refused("invalid_value", str(e), f"{where}.language") from e
            if "prompt" in asked:
                prompt = _text(asked["prompt"], f"{where}.prompt") or None
                try:
                    RecognitionOptions(prompt=prompt)
                except ValueError as e:
                    raise Refused("invalid_value", str(e), f"{where}.prompt") from e
            if "model" in asked:
                # Any of OpenAI's names is taken; the service's own model recognizes.
                model = _text(asked["model"], f"{where}.model") or model
        self.language, self.prompt, self.model, self.vad = language, prompt, model, vad

    def append(self, audio: Any, now: float) -> bytes:
        """The audio of an append, decoded and counted in the turn; refused whole when
        it is not base64 of whole samples, would pass a bound, or comes faster than
        real time past the burst (`now`: a monotonic clock in seconds)."""
        if not isinstance(audio, str):
            raise Refused("invalid_value", "audio must be a base64 string", "audio")
        too_large = Refused(
            "input_audio_buffer_append_too_large",
            f"one append carries at most {self.limits.max_append_bytes} bytes of audio",
            "audio",
        )
        # Measured before decoding (no copy of an oversize message is made), and after.
        if len(audio) > (self.limits.max_append_bytes + 2) // 3 * 4:
            raise too_large
        try:
            pcm = base64.b64decode(audio, validate=True)
        except (binascii.Error, ValueError) as e:
            raise Refused("invalid_value", "audio is not valid base64", "audio") from e
        if len(pcm) > self.limits.max_append_bytes:
            raise too_large
        if len(pcm) % 2:
            raise Refused("invalid_value", "audio/pcm is 16-bit: whole samples only", "audio")
        if self.vad is None and self.turn_bytes + len(pcm) > self.limits.max_turn_s * BYTES_PER_S:
            raise Refused(
                "input_audio_buffer_full",
                f"a turn holds at most {self.limits.max_turn_s:g} s of audio: commit it first",
                "audio",
            )
        if self.session_bytes + len(pcm) > self.limits.max_session_s * BYTES_PER_S:
            raise Refused(
                "session_too_long",
                f"a session holds at most {self.limits.max_session_s:g} s of audio: "
                "it ends here, and what it holds is kept and transcribed",
                "audio",
            )
        seconds = len(pcm) / BYTES_PER_S
        credit = self.limits.burst_s if self.credit_s is None else self.credit_s
        credit = min(self.limits.burst_s, credit + max(0.0, now - self.credit_at))
        if seconds > credit + 1e-6:
            raise Refused(
                "rate_limit_exceeded",
                f"audio comes faster than real time: at most {self.limits.burst_s:g} s "
                "ahead of the clock; send it as it is spoken",
                "audio",
            )
        self.credit_s, self.credit_at = credit - seconds, now
        self.turn_bytes += len(pcm)
        self.session_bytes += len(pcm)
        return pcm

    def begin(self) -> str:
        """The item id of the turn being spoken, given now if it has none."""
        if self.item is None:
            self.item = new_id("item")
        return self.item

    def commit(self) -> tuple[str, str | None]:
        """The turn's item id and the one before it; the next audio is a new turn."""
        if self.turn_bytes < MIN_TURN_S * BYTES_PER_S:
            raise Refused(
                "input_audio_buffer_commit_empty",
                f"the buffer holds {self.turn_bytes / BYTES_PER_S * 1000:.0f} ms of audio: "
                f"a turn needs at least {MIN_TURN_S * 1000:.0f} ms",
            )
        item, previous = self.begin(), self.last_item
        self.last_item, self.item, self.turn_bytes = item, None, 0
        return item, previous

    def clear(self) -> None:
        """The turn's audio forgotten by the recognizer; the session keeps it."""
        self.turn_bytes, self.item = 0, None


def _object(parent: dict[str, Any], key: str, param: str) -> dict[str, Any]:
    value = parent.get(key, {})
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise Refused("invalid_type", f"{param} must be an object", param)
    return value


def _vad(given: Any) -> ServerVad | None:
    """`turn_detection`: null, or OpenAI's `server_vad` with its three numbers."""
    param = "session.audio.input.turn_detection"
    if given is None:
        return None
    if not isinstance(given, dict) or given.get("type") != "server_vad":
        raise Refused(
            "unsupported",
            'turn_detection is null (the client commits) or {"type": "server_vad"}',
            param,
        )
    default = ServerVad()
    threshold = given.get("threshold", default.threshold)
    padding = given.get("prefix_padding_ms", default.prefix_padding_ms)
    silence = given.get("silence_duration_ms", default.silence_duration_ms)
    if (
        not isinstance(threshold, int | float)
        or isinstance(threshold, bool)
        or not (0.0 <= threshold <= 1.0)
    ):
        raise Refused("invalid_value", "threshold is between 0 and 1", f"{param}.threshold")
    for name, value, most in (
        ("prefix_padding_ms", padding, 2000),
        ("silence_duration_ms", silence, 10_000),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
            raise Refused(
                "invalid_value", f"{name} is a whole number of ms, 0 to {most}", f"{param}.{name}"
            )
    # Others of OpenAI's fields (create_response, idle_timeout_ms…) concern responses,
    # which a transcription session has none of: taken and ignored.
    return ServerVad(float(threshold), padding, max(silence, 100))


def _text(value: Any, param: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise Refused("invalid_type", f"{param} must be a string", param)
    return value
