"""A second recognizer: any OpenAI-compatible server
(`POST {url}/v1/audio/transcriptions`, or `/v1/audio/translations` for the translate
task; `response_format=verbose_json` with word timestamps asked for).

Connection errors, timeouts and 5xx answers are transient: retried here a few times,
then the attempt fails and the queue's backoff takes over. A 4xx answer about the
audio itself stops the record: sending it again cannot help.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import tenacity
import trio

from actors import StopRecord
from transcriber.audio.recognize import Transcript
from transcriber.options import RecognitionOptions

# Answers that say the audio itself is unacceptable.
AUDIO_REFUSED = frozenset({400, 413, 415, 422})


class Transient(Exception):
    """The server could not answer now; a later attempt may succeed."""


class RemoteRecognizer:
    def __init__(
        self,
        url: str,
        key: str | None = None,
        *,
        model: str = "whisper-1",
        timeout_s: float = 600.0,
        tries: int = 3,
        first_pause_s: float = 0.5,
    ):
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.model = model
        self.timeout = httpx.Timeout(timeout_s, connect=10.0)
        self.tries = tries
        self.first_pause_s = first_pause_s

    async def transcribe(
        self, audio: Path, language: str | None, options: RecognitionOptions = RecognitionOptions()
    ) -> Transcript:
        """Cancellation: the request is abandoned and its connection closed."""
        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(Transient),
            stop=tenacity.stop_after_attempt(self.tries),
            wait=(
                tenacity.wait_exponential(multiplier=self.first_pause_s, max=10)
                + tenacity.wait_random(0, self.first_pause_s)
            ),
            sleep=trio.sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._once(audio, language, options)
        raise AssertionError("unreachable")

    async def _once(
        self, audio: Path, language: str | None, options: RecognitionOptions
    ) -> Transcript:
        data: dict[str, Any] = {
            "model": self.model,
            "response_format": "verbose_json",
            "timestamp_granularities[]": ["segment", "word"],
        }
        if options.task == "translate":
            # The translations endpoint takes no language: its output is English.
            endpoint = self.url + "/v1/audio/translations"
        else:
            endpoint = self.url + "/v1/audio/transcriptions"
            if language:
                data["language"] = language
        prompt = remote_prompt(options)
        if prompt:
            data["prompt"] = prompt
        if options.temperature is not None:
            data["temperature"] = str(options.temperature)
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                # Opened in a thread; httpx then reads it in chunks as it sends.
                with await trio.to_thread.run_sync(lambda: audio.open("rb")) as f:
                    answer = await client.post(
                        endpoint,
                        headers=self.headers,
                        data=data,
                        files={"file": (audio.name, f, "audio/wav")},
                    )
        except httpx.TransportError as e:
            raise Transient(f"{type(e).__name__}: {e}") from e
        if answer.status_code >= 500:
            raise Transient(f"recognizer answered {answer.status_code}: {answer.text[:200]}")
        if answer.status_code in AUDIO_REFUSED:
            raise StopRecord(
                "recognizer_refused_audio", f"{answer.status_code}: {answer.text[:500]}"
            )
        if answer.status_code != 200:
            raise RuntimeError(f"recognizer answered {answer.status_code}: {answer.text[:200]}")
        return parse_verbose_json(answer.json(), self.model_name)

    @property
    def model_name(self) -> str:
        """As the transcripts it makes name their model."""
        return f"remote:{self.model}"


def remote_prompt(options: RecognitionOptions) -> str | None:
    """The prompt a remote recognizer is sent: the vocabulary's terms (an OpenAI-compatible
    server has no hotwords; a prompt naming them is how OpenAI says to spell names), then
    the record's own prompt."""
    parts = [", ".join(options.vocabulary) + "." if options.vocabulary else "", options.prompt]
    return " ".join(p for p in parts if p) or None


def parse_verbose_json(body: dict[str, Any], model: str) -> Transcript:
    """The transcript, its model named `model`. Segments with their words: a segment's
    own `words` when the server gives them (faster-whisper servers do), else the
    answer's `words` (OpenAI's) by their start time, each in the segment it starts in."""
    segments = [
        {
            "start": float(s["start"]),
            "end": float(s["end"]),
            "text": s["text"].strip(),
            "words": [_word(w) for w in s.get("words") or []],
        }
        for s in body.get("segments") or []
        if s.get("text", "").strip()
    ]
    loose = [_word(w) for w in body.get("words") or []]
    if loose and not any(s["words"] for s in segments):
        for w in loose:
            home = next(
                (s for s in reversed(segments) if s["start"] <= w["start"]),
                segments[0] if segments else None,
            )
            if home is not None:
                home["words"].append(w)
    text = (body.get("text") or " ".join(s["text"] for s in segments)).strip()
    return Transcript(text, segments, body.get("language"), model)


def _word(w: dict[str, Any]) -> dict[str, Any]:
    return {
        "start": float(w["start"]),
        "end": float(w["end"]),
        "word": w["word"],
        "probability": w.get("probability"),
    }
