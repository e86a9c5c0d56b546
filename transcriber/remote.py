"""A second recognizer: any OpenAI-compatible server
(`POST {url}/v1/audio/transcriptions`, `response_format=verbose_json`).

Connection errors, timeouts and 5xx answers are transient: retried here a few times,
then the attempt fails and the queue's backoff takes over. A 4xx answer about the
audio itself stops the record: sending it again cannot help.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import tenacity

from actors import StopRecord
from actors.queue import Job
from actors.steps import Progress
from transcriber.blobs import blobs_of
from transcriber.config import Config
from transcriber.queue import Saved
from transcriber.recognize import Transcript

# Answers that say the audio itself is unacceptable.
AUDIO_REFUSED = frozenset({400, 413, 415, 422})


class Transient(Exception):
    """The server could not answer now; a later attempt may succeed."""


class RemoteRecognizer:
    def __init__(self, url: str, key: str | None = None, *, model: str = "whisper-1",
                 timeout_s: float = 600.0, tries: int = 3, first_pause_s: float = 0.5):
        self.endpoint = url.rstrip("/") + "/v1/audio/transcriptions"
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.model = model
        self.timeout = httpx.Timeout(timeout_s, connect=10.0)
        self.tries = tries
        self.first_pause_s = first_pause_s

    async def transcribe(self, audio: Path, language: str | None) -> Transcript:
        """Cancellation: the request is abandoned and its connection closed."""
        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(Transient),
            stop=tenacity.stop_after_attempt(self.tries),
            wait=(tenacity.wait_exponential(multiplier=self.first_pause_s, max=10)
                  + tenacity.wait_random(0, self.first_pause_s)),
            sleep=_trio_sleep, reraise=True)
        async for attempt in retrying:
            with attempt:
                return await self._once(audio, language)
        raise AssertionError("unreachable")

    async def _once(self, audio: Path, language: str | None) -> Transcript:
        data = {"model": self.model, "response_format": "verbose_json"}
        if language:
            data["language"] = language
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                with open(audio, "rb") as f:
                    answer = await client.post(self.endpoint, headers=self.headers, data=data,
                                               files={"file": (audio.name, f, "audio/wav")})
        except httpx.TransportError as e:
            raise Transient(f"{type(e).__name__}: {e}") from e
        if answer.status_code >= 500:
            raise Transient(f"recognizer answered {answer.status_code}: {answer.text[:200]}")
        if answer.status_code in AUDIO_REFUSED:
            raise StopRecord("recognizer_refused_audio",
                             f"{answer.status_code}: {answer.text[:500]}")
        if answer.status_code != 200:
            raise RuntimeError(f"recognizer answered {answer.status_code}: {answer.text[:200]}")
        return parse_verbose_json(answer.json(), self.model)


def parse_verbose_json(body: dict[str, Any], model: str) -> Transcript:
    segments = [{"start": float(s["start"]), "end": float(s["end"]), "text": s["text"].strip()}
                for s in body.get("segments") or [] if s.get("text", "").strip()]
    text = (body.get("text") or " ".join(s["text"] for s in segments)).strip()
    return Transcript(text, segments, body.get("language"), f"remote:{model}")


async def _trio_sleep(seconds: float) -> None:
    import trio
    await trio.sleep(seconds)


def remote_step(config: Config, recognizer: RemoteRecognizer):  # -> StepFn
    async def recognize(job: Job, progress: Progress) -> Saved:
        language = job.inputs.get("language") or config.language
        async with blobs_of(config).local_file(job.inputs["audio_path"]) as audio:
            transcript = await recognizer.transcribe(audio, language)
        return transcript.saved()

    return recognize
