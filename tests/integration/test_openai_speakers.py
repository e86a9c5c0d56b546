"""OpenAI's known speakers through the real `openai` SDK against a real `transcriber
serve` with real recognition and diarization: a two-voice conversation of espeak-ng
voices (bench/speakers.py's builder) and a clip of each voice saying another sentence,
sent as data URLs; the found speakers take the names of the clips they sound like."""

from __future__ import annotations

import base64
import io
import wave
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pytest

from tests.helpers.serve_process import serve_process
from tests.integration.test_openai import in_thread, sdk
from transcriber.bench.speakers import VOICES, _say
from transcriber.db.database import Database
from transcriber.owners import add_owner

OTHER = "She said the library will be closed for repairs until the end of the month."


def data_url(samples: np.ndarray[Any, Any]) -> str:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(samples.astype(np.int16).tobytes())
    return "data:audio/wav;base64," + base64.b64encode(out.getvalue()).decode()


@pytest.mark.scenario("speakers", "Known speakers are named by their voices")
async def test_known_speakers_are_named_by_their_voices(
    db: Database,
    db_url: str,
    tmp_path: Path,
    model_dir: Path,
    conversation: tuple[Path, list[Any]],
) -> None:
    wav, reference = conversation
    first_voice = reference[0][2]
    clips = [data_url(_say(OTHER, VOICES[k], 160, tmp_path / f"clip{k}.wav")) for k in (0, 1)]
    # Anna is the voice that speaks first, Boris the other.
    anna, boris = clips[first_voice], clips[1 - first_voice]
    long_clip = data_url(np.tile(_say(OTHER, VOICES[0], 160, tmp_path / "long.wav"), 3))
    ann = await add_owner(db, "ann")
    async with serve_process(
        db_url, tmp_path / "home", "--workers", "1", model=str(model_dir)
    ) as s:
        client = sdk(s.url, ann.token)

        def ask(names: list[str], refs: list[str]) -> Any:
            with wav.open("rb") as f:
                return client.audio.transcriptions.create(
                    model="gpt-4o-transcribe-diarize",
                    file=f,
                    response_format="diarized_json",
                    chunking_strategy="auto",
                    known_speaker_names=names,
                    known_speaker_references=refs,
                )

        # Refused before anything is recognized: too many, too long, not audio, unpaired.
        for names, refs, words in (
            (["A", "B", "C", "D", "E"], [anna] * 5, "more than 4"),
            (["Anna"], [long_clip], "longer than 10 s"),
            (
                ["Anna"],
                ["data:audio/wav;base64," + base64.b64encode(b"no audio").decode()],
                "not audio",
            ),
            (["Anna"], ["https://example.com/anna.wav"], "data URL"),
            (["Anna", "Boris"], [anna], "one clip for each name"),
        ):
            with pytest.raises(openai.BadRequestError) as refused:
                await in_thread(lambda names=names, refs=refs: ask(names, refs))
            assert refused.value.status_code == 400 and words in refused.value.message, (
                words,
                refused.value.message,
            )

        both = await in_thread(lambda: ask(["Anna", "Boris"], [anna, boris]))
        assert isinstance(both, openai.types.audio.TranscriptionDiarized)
        said = [seg.speaker for seg in both.segments]
        assert said[0] == "Anna" and set(said) == {"Anna", "Boris"}, said
        # The same audio again is the same record (not recognized twice); Anna alone
        # names hers, the other voice keeps its letter.
        alone = await in_thread(lambda: ask(["Anna"], [anna]))
        assert [seg.speaker for seg in alone.segments] == [
            "Anna" if who == "Anna" else "A" for who in said
        ]
