"""A live session's state, without I/O: what the client configured (`session.update`),
the audio of the turn being spoken (`input_audio_buffer.append`), its commit and its
clearing, and the bounds that keep a session's memory fixed whatever the client sends.

The protocol's audio is OpenAI's `audio/pcm`: 16-bit little-endian mono at 24 kHz."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import attrs

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


@attrs.define
class Turns:
    limits: LiveLimits
    language: str | None = None
    prompt: str | None = None
    model: str = "whisper-1"
    buffer: bytearray = attrs.field(factory=bytearray)
    session_bytes: int = 0
    last_item: str | None = None

    def described(self) -> dict[str, Any]:
        """The session's effective configuration, as `session.created`/`updated` say it
        (the SDK's `RealtimeTranscriptionSessionCreateRequest`). Turns are the
        client's commits: `turn_detection` is null (the server's VAD is not here yet)."""
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
                    "turn_detection": None,
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
        if given.get("turn_detection") is not None:
            raise Refused(
                "unsupported",
                "turn_detection must be null: commit each turn with input_audio_buffer.commit",
                "session.audio.input.turn_detection",
            )
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
        self.language, self.prompt, self.model = language, prompt, model

    def append(self, audio: Any) -> bytes:
        """The audio of an append, decoded and added to the turn; refused whole when
        it is not base64 of whole samples or would pass a bound."""
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
        if len(self.buffer) + len(pcm) > self.limits.max_turn_s * BYTES_PER_S:
            raise Refused(
                "input_audio_buffer_full",
                f"a turn holds at most {self.limits.max_turn_s:g} s of audio: commit it first",
                "audio",
            )
        if self.session_bytes + len(pcm) > self.limits.max_session_s * BYTES_PER_S:
            raise Refused(
                "session_too_long",
                f"a session holds at most {self.limits.max_session_s:g} s of audio",
                "audio",
            )
        self.buffer += pcm
        self.session_bytes += len(pcm)
        return pcm

    def commit(self) -> tuple[str, str | None, bytes]:
        """The turn's item id, the one before it, and its audio; the buffer is empty
        after it."""
        if len(self.buffer) < MIN_TURN_S * BYTES_PER_S:
            raise Refused(
                "input_audio_buffer_commit_empty",
                f"the buffer holds {len(self.buffer) / BYTES_PER_S * 1000:.0f} ms of audio: "
                f"a turn needs at least {MIN_TURN_S * 1000:.0f} ms",
            )
        item, previous = new_id("item"), self.last_item
        self.last_item = item
        pcm, self.buffer = bytes(self.buffer), bytearray()
        return item, previous, pcm

    def clear(self) -> None:
        """The turn's audio forgotten by the recognizer; the session keeps it."""
        self.buffer = bytearray()


def _object(parent: dict[str, Any], key: str, param: str) -> dict[str, Any]:
    value = parent.get(key, {})
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise Refused("invalid_type", f"{param} must be an object", param)
    return value


def _text(value: Any, param: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise Refused("invalid_type", f"{param} must be a string", param)
    return value
