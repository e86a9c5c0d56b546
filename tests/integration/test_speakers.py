"""Who spoke, on a real database with the real model and the real speaker network: a
two-voice conversation spoken here by espeak-ng (sox for the second voice's pitch) goes
through the whole pipeline; a diarization that fails leaves the transcript readable with
its stop on the card, and resumes from `recognized`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from actors import Backoff, StepTable, Wakeup, Worker
from tests.helpers.pg_pipeline import state
from transcriber.audio.processes import ProcessRecognizer
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import accept_file
from transcriber.milestones import RECOGNIZED, TRANSCRIBED
from transcriber.options import RecognitionOptions
from transcriber.pipeline import operator
from transcriber.pipeline.audio_steps import audio_steps, diarize_step
from transcriber.pipeline.operator import card
from transcriber.pipeline.pg_queue import PgQueue


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("speakers", title)


def worker(db: Database, steps: StepTable) -> Worker:
    return Worker("w", PgQueue(db, steps), steps, Wakeup())


async def run_until(db: Database, steps: StepTable, rid: Any, done: Any) -> dict[str, Any]:
    w = worker(db, steps)
    with trio.fail_after(300):
        while True:
            c = await card(db, rid)
            assert c is not None
            if done(c):
                return c
            if not await w.work_once():
                await trio.sleep(0.002)


def labelled(segments: list[dict[str, Any]], turns: list[Any]) -> list[dict[str, Any]]:
    from transcriber.audio.speakers import Turn, assign

    return assign(segments, [Turn(*t) for t in turns])


@scenario("A two-voice conversation is told apart end to end")
async def test_two_voices_end_to_end(
    db: Database,
    owner_id: int,
    tmp_path: Path,
    model_dir: Path,
    warm_recognizer: ProcessRecognizer,
    conversation: tuple[Path, list[Any]],
) -> None:
    wav, reference = conversation
    config = Config(home=tmp_path / "home", model=str(model_dir))
    rid = await accept_file(
        db, config, wav, owner_id, language="en", options=RecognitionOptions(speakers="auto")
    )
    done = await run_until(db, audio_steps(config, warm_recognizer), rid, lambda c: c["done"])
    assert done["stopped"] is None
    assert done["speakers"] == {"asked": "auto", "found": 2}
    t = await db.fetchrow("transcript", rid)
    assert t["speaker_count"] == 2
    segments = labelled(t["segments"], t["turns"])
    assert {s["speaker"] for s in segments} == {"Speaker 1", "Speaker 2"}
    # Each word's speaker is its reference turn's (the first voice is "Speaker 1").
    words = [w for s in segments for w in s["words"]]
    right = 0
    for w in words:
        middle = (w["start"] + w["end"]) / 2
        truth = [k for a, b, k in reference if a - 0.3 <= middle <= b + 0.3]
        right += bool(truth) and w["speaker"] == f"Speaker {truth[0] + 1}"
    assert right >= 0.9 * len(words), (right, len(words))
    reached = [
        e["milestone"]
        for e in await db.fetch("ops_journal", rid, 1000)
        if e["kind"] == "milestone_reached"
    ]
    assert reached == ["normalized", RECOGNIZED, TRANSCRIBED]


@scenario("A record whose speakers are off skips diarization")
async def test_speakers_off_skip_diarization(
    db: Database, owner_id: int, tmp_path: Path, conversation: tuple[Path, list[Any]]
) -> None:
    config = Config(home=tmp_path / "home")
    seen: list[Any] = []

    class Recognizer:
        def warm(self, n: int, *, wait: bool = True) -> None:
            pass

        def transcribe(self, *args: Any) -> Any:
            from transcriber.audio.recognize import Transcript

            return Transcript("hello", [{"start": 0.0, "end": 1.0, "text": "hello"}], "en", "t")

        def diarize(self, *args: Any) -> Any:
            seen.append(args)
            raise AssertionError("diarized a record whose speakers are off")

    rid = await accept_file(db, config, conversation[0], owner_id)
    steps = audio_steps(config, Recognizer())  # type: ignore[arg-type]
    done = await run_until(db, steps, rid, lambda c: c["done"] or c["stopped"])
    assert done["done"] and done["stopped"] is None
    assert done["speakers"] == {"asked": None, "found": None}
    assert seen == []
    reached = [
        e["milestone"]
        for e in await db.fetch("ops_journal", rid, 1000)
        if e["kind"] == "milestone_reached"
    ]
    assert reached == ["normalized", TRANSCRIBED]


@scenario("A failed diarization keeps the transcript readable and resumes where it stopped")
async def test_failed_diarization_keeps_transcript(
    db: Database,
    owner_id: int,
    tmp_path: Path,
    model_dir: Path,
    warm_recognizer: ProcessRecognizer,
    conversation: tuple[Path, list[Any]],
) -> None:
    config = Config(home=tmp_path / "home", model=str(model_dir))

    class Broken:
        def diarize(self, *args: Any) -> Any:
            raise RuntimeError("speaker network fell over")

    real = audio_steps(config, warm_recognizer)
    failing = StepTable(
        {
            m: attrs.evolve(
                s,
                backoff=Backoff(base_s=0.001, cap_s=0.001),
                **({"run": diarize_step(config, Broken())} if m == RECOGNIZED else {}),
            )
            for m, s in real.steps.items()
        }
    )
    rid = await accept_file(
        db,
        config,
        conversation[0],
        owner_id,
        language="en",
        options=RecognitionOptions(speakers="2"),
    )
    stopped = await run_until(db, failing, rid, lambda c: c["stopped"] is not None)
    assert stopped["milestone"] == RECOGNIZED
    assert stopped["readable"] and not stopped["done"]
    assert stopped["stopped"]["reason"] == "attempts_exhausted"
    assert "speaker network fell over" in stopped["stopped"]["error"]
    t = await db.fetchrow("transcript", rid)
    assert t is not None and t["text"].strip() and t["turns"] is None

    # The owner reads it through the API's transcript route meanwhile (not 409).
    from transcriber.http.downloads import transcript_response

    answer = await transcript_response(db, owner_id, rid, "json")
    assert answer.status_code == 200
    body = json.loads(bytes(answer.body))
    assert body["text"] == t["text"] and "speakers" not in body

    await operator.resume(db, rid, by="operator")
    done = await run_until(db, real, rid, lambda c: c["done"] or c["stopped"])
    assert done["done"] and done["speakers"]["found"] == 2
    reached = [
        e["milestone"]
        for e in await db.fetch("ops_journal", rid, 1000)
        if e["kind"] == "milestone_reached"
    ]
    assert reached == ["normalized", RECOGNIZED, TRANSCRIBED]  # recognized once
    answer = await transcript_response(db, owner_id, rid, "json")
    body = json.loads(bytes(answer.body))
    assert [s["name"] for s in body["speakers"]] == ["Speaker 1", "Speaker 2"]
    assert all(s["speaking_s"] > 3 for s in body["speakers"])
    assert (await state(db, rid))["milestone"] == TRANSCRIBED


def test_speech_is_found_a_piece_at_a_time_as_whole(conversation: tuple[Path, list[Any]]) -> None:
    """The VAD runs on pieces (its memory bounded); speech running across a cut stays one
    stretch, and the speech found is the same within a fraction of a second."""
    import numpy as np

    from transcriber.audio.recognize import read_windows
    from transcriber.audio.speakers_clustering import _covered
    from transcriber.audio.speakers_windows import speech_stretches

    path, _ = conversation
    samples = np.concatenate([s for _, s in read_windows(path)])
    whole = speech_stretches(samples, piece_s=3600)
    pieces = speech_stretches(samples, piece_s=7)
    assert abs(_covered(np.array(pieces)) - _covered(np.array(whole))) < 0.5
    for cut in range(7, int(len(samples) / 16000), 7):
        if any(s < cut < e for s, e in whole):
            assert any(s < cut < e for s, e in pieces), cut


@scenario("An asked count is honoured on a short recording")
def test_two_asked_are_two_on_the_last_seconds_of_a_conversation(
    conversation: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    """The conversation's last 8 s: one voice for 3.2 s, a pause, the other for 3.7 s,
    eight windows of speech (three of the first voice's at least a second long). Asked
    for two, the owner gets two: they were one, the windows too few to cluster and the
    first voice's cluster too small to stand."""
    import wave

    from transcriber.audio.speakers import diarize
    from transcriber.speaker_options import SpeakersOption

    path, reference = conversation
    clip = tmp_path / "last-8s.wav"
    with wave.open(str(path), "rb") as r:
        r.setpos(r.getnframes() - 8 * r.getframerate())
        frames = r.readframes(8 * r.getframerate())
        duration = r.getnframes() / r.getframerate()
        params = r.getparams()
    with wave.open(str(clip), "wb") as w:
        w.setparams(params)
        w.writeframes(frames)
    start = duration - 8
    heard = [(max(0.0, a - start), b - start, s) for a, b, s in reference if b > start]
    assert len({s for _, _, s in heard}) == 2, heard  # the clip holds both voices

    found = diarize(clip, SpeakersOption.parse("2"))
    assert found.speakers == 2, found
    assert {t.speaker for t in found.turns} == {0, 1}, found.turns
    # The longer voice (3.7 s, five windows) is one speaker's. Who said the shorter one's
    # three windows is left open: on eight windows a near tie can go either way (a CI run
    # split them across both speakers while the count held) — the count is the promise.
    a, b, _ = max(heard, key=lambda h: h[1] - h[0])
    mine = {t.speaker for t in found.turns if min(b, t.end) - max(a, t.start) > 0.5}
    assert len(mine) == 1, (a, b, found.turns)


@scenario("A male and a female variant of one voice are two speakers")
def test_a_male_and_a_female_variant_of_one_voice_are_two(tmp_path: Path) -> None:
    """The issue's case: 8 turns (50 s) of espeak-ng's en+m2 and en+f1, whose windows are
    more alike across (about 0.6) than LINK_COSINE: `auto` found one speaker before
    APART_MARGIN; now two, and most of the speech is given to the right one."""
    from transcriber.audio.speakers import diarize
    from transcriber.bench.speakers import der, make_conversation
    from transcriber.bench.speakers_count import MALE_FEMALE
    from transcriber.speaker_options import SpeakersOption

    path = tmp_path / "male-female.wav"
    reference = make_conversation(path, 2, 8, seed=7801, voices=MALE_FEMALE[2])
    found = diarize(path, SpeakersOption.parse("auto"))
    assert found.speakers == 2, found
    assert der(reference, [(t.start, t.end, t.speaker) for t in found.turns])["der"] < 0.1


@scenario("A voice that says a short turn twice is counted, on real speech")
def test_a_voice_that_says_a_short_turn_twice_is_counted(tmp_path: Path) -> None:
    """Two of bench-speakers' voices talk (8 turns); a third only says something short
    twice (1.1 s and 1.9 s of speech): `auto` finds three, each voice most of one
    speaker's speech (speakers_clustering.APART_COSINE, windows of loud frames). The
    count before folded that voice (2 speakers) in 7 of 8 such conversations (seeds
    501–508), this one among them; the count now finds it in 7."""
    from transcriber.audio.speakers import diarize
    from transcriber.bench.speakers import VOICES
    from transcriber.bench.speakers_count_judge3 import make_meeting
    from transcriber.speaker_options import SpeakersOption

    path = tmp_path / "brief.wav"
    reference = make_meeting(path, 3, 8, 506, VOICES, 4, brief=1)
    assert [round(e - s, 1) for s, e, k in reference if k == 2] == [1.1, 1.9]
    found = diarize(path, SpeakersOption.parse("auto"))
    assert found.speakers == 3, found

    def most_of(voice: int) -> int:
        """The found speaker given most of `voice`'s speech."""
        said = [(s, e) for s, e, k in reference if k == voice]
        overlap = {
            t.speaker: sum(max(0.0, min(e, t.end) - max(s, t.start)) for s, e in said)
            for t in found.turns
        }
        return max(overlap, key=lambda k: overlap[k])

    # Each voice is most of one speaker's (a one-word turn of another may go to any).
    assert len({most_of(k) for k in range(3)}) == 3, found.turns
