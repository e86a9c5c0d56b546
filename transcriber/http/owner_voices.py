"""Remembering a voice, whichever face asks (the API's `POST /v1/voices`, the page's
"remember this voice"): a found speaker of one of the owner's diarized records becomes a
voice of their library (transcriber.records.voices), or adds to one.

The voice is the one the diarize step kept (the mean of that speaker's windows) when the
owner remembered voices then; for a record diarized before, it is taken now from the
record's audio the same way (windows over that speaker's turns, their embeddings'
mean), in a worker thread."""

import functools
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import trio

from transcriber.audio.speakers import Turn, mean_voices
from transcriber.audio.speakers_model import CamPlusPlus
from transcriber.audio.speakers_windows import embed_windows, windows_of
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.errors import ApiError
from transcriber.records.archive import audio_ref, transcript
from transcriber.records.settings import owner_settings
from transcriber.records.speaker_names import BadSpeaker, owner_speakers, speaker_number
from transcriber.records.voices import (
    KeptVoice,
    NotRemembering,
    check_voice_name,
    kept_voice,
    remember,
)
from transcriber.storage.configured import blobs_of

WINDOWS_MAX = 400
"""Windows (1.5 s, every 0.75 s) of one speaker embedded for a voice not kept: five
minutes of their speech, the longest turns first; bounded however long the record."""
NOT_REMEMBERING = (
    "voices are not remembered for you: turn on remember_voices in your settings first"
)


async def remember_speaker(
    db: Database,
    config: Config,
    owner: int,
    recording_id: uuid.UUID,
    label: str,
    name: Any,
    voice_id: uuid.UUID | None = None,
) -> tuple[dict[str, Any], bool]:
    """Speaker `label` ("Speaker 2", or its name) of the owner's record kept as their
    voice `name` (or added to `voice_id`): the voice, and whether it is new. 404: the
    record, the speaker or the voice is not theirs; 409: voices are not remembered, or
    the record is not diarized; BadVoice: the name refused. Cancellation: reads, a
    thread (the audio's embeddings, for a voice not kept: seconds), then the writes."""
    if not (await owner_settings(db, owner)).remember_voices:
        raise NotRemembering(NOT_REMEMBERING)
    name = check_voice_name(name)
    t = await transcript(db, owner, recording_id)
    if t is None or t.get("turns") is None:
        raise ApiError(409, "the record's speakers were not told apart (speakers off, or not yet)")
    turns = [Turn(*turn) for turn in t["turns"]]
    said = await owner_speakers(db, owner, recording_id)
    try:
        speaker = speaker_number(label, said.names)
    except BadSpeaker:
        raise ApiError(404, "no such speaker") from None
    if speaker not in {turn.speaker for turn in turns}:
        raise ApiError(404, "no such speaker")
    heard = await kept_voice(db, owner, recording_id, speaker)
    if heard is None:
        heard = await _heard_now(db, config, owner, recording_id, turns, speaker)
    done = await remember(db, owner, name, heard, voice_id, (recording_id, speaker))
    if done is None:
        raise ApiError(404, "no such voice")
    return done


@functools.cache
def _net() -> CamPlusPlus:
    return CamPlusPlus.load()


async def _heard_now(
    db: Database,
    config: Config,
    owner: int,
    rid: uuid.UUID,
    turns: list[Turn],
    speaker: int,
) -> KeptVoice:
    ref = await audio_ref(db, owner, rid)
    if ref is None:
        raise ApiError(409, "the record's audio is gone")
    async with blobs_of(config).local_file(ref) as audio:
        return await trio.to_thread.run_sync(lambda: speaker_voice(audio, turns, speaker, _net()))


def speaker_voice(audio: Path, turns: list[Turn], speaker: int, net: CamPlusPlus) -> KeptVoice:
    """The voice of `speaker` in a normalized wav (16 kHz mono int16): the unit mean of
    the embeddings of windows over their turns, as diarization takes its windows,
    the longest turns first, at most WINDOWS_MAX. Blocking: a worker thread."""
    import wave

    mine = sorted((t for t in turns if t.speaker == speaker), key=lambda t: t.start - t.end)
    parts = []
    with wave.open(str(audio), "rb") as w:
        rate = w.getframerate()
        count = 0
        for t in mine:
            if count >= WINDOWS_MAX:
                break
            w.setpos(min(int(t.start * rate), w.getnframes()))
            frames = w.readframes(int((t.end - t.start) * rate))
            samples = np.frombuffer(frames, dtype=np.int16).astype(np.float32) / 32768.0
            end = len(samples) / rate
            local = windows_of(0.0, end) if end >= 0.5 else []
            if local:
                parts.append(embed_windows(net, samples, local[: WINDOWS_MAX - count]))
                count += len(local)
    if not parts:
        raise ApiError(409, "this speaker has too little speech to remember")
    embeddings = np.concatenate(parts)
    vector = mean_voices(embeddings, [0] * len(embeddings), {0: 0})[0]
    return KeptVoice(tuple(vector), round(sum(t.end - t.start for t in mine), 3))
