"""The real pipeline: the audio steps (normalize, recognize locally or remotely) as the
runtime runs them, and the step table that holds them. The audio package knows nothing
of jobs and queues; this module turns its work into steps and their results into
what the commit saves."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import trio

from actors import Job, Progress, StepFn, StepTable, StopRecord
from transcriber.audio.alignment import align
from transcriber.audio.models import model_name
from transcriber.audio.normalize import Rejected, decode_to_wav
from transcriber.audio.processes import ProcessRecognizer
from transcriber.audio.recognize import Transcript
from transcriber.audio.remote import RemoteRecognizer
from transcriber.audio.speakers import Diarization, diarize
from transcriber.audio.speakers_model import WeightsMissing
from transcriber.audio.threads import Control, run_in_thread
from transcriber.audio.voice_cohort import cohort as voice_cohort
from transcriber.config import Config
from transcriber.milestones import TRANSCRIBED
from transcriber.options import RecognitionOptions
from transcriber.pipeline.pg_queue import Saved
from transcriber.pipeline.step_table import step_table
from transcriber.records.drafts import Drafts
from transcriber.records.voices import MATCH, found_voices
from transcriber.speaker_options import SpeakersOption
from transcriber.storage.blobs import Blobs, audio_name
from transcriber.storage.configured import blobs_of


def audio_steps(
    config: Config,
    recognizer: ProcessRecognizer | None = None,
    *,
    warm: int = 0,
    drafts: Drafts | None = None,
) -> StepTable:
    """Recognition by the remote server when TRANSCRIBER_RECOGNIZER_URL is set, else by
    the local model in child processes (`recognizer`'s, when given: warm ones shared).

    `warm` children start loading the model now, so the first recognitions do not wait
    for it (about a second for base, much longer for a large model); they load at the
    children's low priority while the service starts. `drafts`: where local recognition
    keeps the segments it has heard so far (a daemon's streamed OpenAI answers read them)."""
    diarizer: BlockingDiarizer
    if config.recognizer_url:
        recognize = remote_step(
            config, RemoteRecognizer(config.recognizer_url, config.recognizer_key), diarized=True
        )
        # Who spoke is found here, not by the remote recognizer (an OpenAI-compatible
        # server need not know): in a thread, there being no local model's children.
        diarizer = InThreadDiarizer()
    else:
        recognizer = recognizer or ProcessRecognizer(config)
        recognizer.warm(warm, wait=False)
        recognize = recognize_step(config, recognizer, diarized=True, drafts=drafts)
        diarizer = recognizer
    return step_table(
        normalize=normalize_step(config),
        recognize=recognize,
        diarize=diarize_step(config, diarizer),
        lease_s=config.lease_s,
        renew_s=config.renew_s,
        run_limit_s=config.run_limit_s,
        run_limit_per_audio_s=config.run_limit_per_audio_s,
    )


def recognizer_name(config: Config) -> str:
    """The model name the configured recognizer writes into the transcripts it makes."""
    if config.recognizer_url:
        return RemoteRecognizer(config.recognizer_url).model_name
    return model_name(config)


def normalize_step(config: Config, store: Blobs | None = None) -> StepFn:
    """The normalize step: reads the upload from the store, writes the audio back to it
    under a name of this claim's own (`<id>.<token>.wav`), so only the holder whose
    fenced commit wins ever has its audio named by the record.

    Bounds: the audio must fit the owner's audio quota (what their other records hold,
    read with the claim; normalizations of one owner running at once may pass it by one
    record each) and the disk's reserve, checked before the file is started and before
    each chunk written (DiskReserve fails the attempt: the partial file is removed and
    the record retried). Past the quota the record stops with `audio_quota`; a resume
    once the owner has room normalizes it again.

    Cancellation and failure: the scratch copy of the upload and the unpublished audio
    are removed on the way out.
    """

    store = store or blobs_of(config)
    quota_s = config.owner_max_audio_hours * 3600.0

    async def normalize(job: Job, progress: Progress) -> Saved:
        room_s = quota_s - (job.inputs.get("owner_audio_s") or 0.0)
        async with (
            store.local_file(job.inputs["source_path"]) as src,
            store.new_audio(audio_name(job.claim.id, job.claim.token)) as audio,
        ):
            try:
                duration = await run_in_thread(
                    lambda control: decode_to_wav(
                        src,
                        audio.path,
                        max_duration_s=config.max_duration_s,
                        quota_room_s=room_s,
                        before_write=audio.check_room,
                        control=control,
                    ),
                    progress,
                )
            except Rejected as e:
                raise StopRecord(e.reason, e.error) from None
            await audio.publish()
        ref = audio.ref
        # A refused commit (the record deleted, or the claim lost meanwhile): the audio
        # is this claim's alone and no record will name it.
        return Saved("save_normalized", (ref, duration), on_refused=lambda: store.remove(ref))

    return normalize


class BlockingRecognizer(Protocol):
    """What the recognize step runs in a thread: WhisperRecognizer itself, or
    ProcessRecognizer (the engine in child processes)."""

    def transcribe(
        self,
        audio: Path,
        duration_s: float,
        language: str | None,
        control: Control | None = ...,
        options: RecognitionOptions = ...,
    ) -> Transcript: ...


def recognize_step(
    config: Config,
    recognizer: BlockingRecognizer,
    *,
    diarized: bool = False,
    drafts: Drafts | None = None,
) -> StepFn:
    """The step, with a recognizer whose blocking `transcribe(audio, duration, language,
    control, options)` runs in a thread: the engine itself, or a process of its own.
    `diarized`: the table has a diarize step, which records with speakers off skip.
    `drafts`: the segments' texts are kept there as they are recognized, under this
    claim's token."""

    async def recognize(job: Job, progress: Progress) -> Saved:
        language = job.inputs.get("language") or config.language
        options = recognition_options(config, job)
        written = 0

        async def keep_drafts(texts: list[str]) -> None:
            nonlocal written
            assert drafts is not None
            await drafts.add(job.claim.id, job.claim.token, written, texts)  # type: ignore[arg-type]
            written += len(texts)

        async with blobs_of(config).local_file(job.inputs["audio_path"]) as audio:
            transcript = await run_in_thread(
                lambda control: aligned(
                    recognizer.transcribe(
                        audio, job.inputs["duration_s"] or 0.0, language, control, options
                    ),
                    options,
                ),
                progress,
                drafts=keep_drafts if drafts is not None else None,
            )
        return saved_transcript(transcript, skip_diarize=diarized and speakers_off(config, job))

    return recognize


def recognition_options(config: Config, job: Job) -> RecognitionOptions:
    """The record's options, its vocabulary the service's (TRANSCRIBER_VOCABULARY) when it
    asks none."""
    options = RecognitionOptions.from_json(job.inputs.get("options"))
    return options.vocabulary_or(config.vocabulary)


def aligned(transcript: Transcript, options: RecognitionOptions) -> Transcript:
    """The transcript as the record asks: the owner's text timed by it for task `align`
    (transcriber.audio.alignment), else as recognized."""
    if options.task == "align" and options.text is not None:
        return align(transcript, options.text)
    return transcript


def speakers_off(config: Config, job: Job) -> bool:
    """Whether the record's speakers (its own option, else the service's) are off."""
    options = RecognitionOptions.from_json(job.inputs.get("options"))
    return options.speakers_or(config.speakers).off


class BlockingDiarizer(Protocol):
    """What the diarize step runs in a thread: ProcessRecognizer (in its child processes)
    or InThreadDiarizer."""

    def diarize(
        self,
        audio: Path,
        duration_s: float,
        speakers: SpeakersOption,
        control: Control | None = ...,
    ) -> Diarization: ...


class InThreadDiarizer:
    """Diarization in the calling thread (remote recognition has no local children)."""

    def diarize(
        self,
        audio: Path,
        duration_s: float,
        speakers: SpeakersOption,
        control: Control | None = None,
    ) -> Diarization:
        return diarize(audio, speakers, duration_s, control)


def diarize_step(config: Config, diarizer: BlockingDiarizer) -> StepFn:
    """The diarize step (recognized → transcribed): who spoke when, stored beside the
    transcript, which stays readable throughout. A record whose speakers are off moves on
    at once with nothing saved (none is left here: their recognition skipped this step).
    Without the speaker model's package the record stops
    (`speaker_model_missing`): no retry would find it.

    Cancellation: the thread's control stops the work (the child is killed)."""

    async def diarize(job: Job, progress: Progress) -> Saved | None:
        options = RecognitionOptions.from_json(job.inputs.get("options"))
        speakers = options.speakers_or(config.speakers)
        if speakers.off:
            return None
        duration = job.inputs["duration_s"] or 0.0
        async with blobs_of(config).local_file(job.inputs["audio_path"]) as audio:
            try:
                found = await run_in_thread(
                    lambda control: diarizer.diarize(audio, duration, speakers, control),
                    progress,
                )
            except WeightsMissing as e:
                raise StopRecord("speaker_model_missing", str(e)) from None
        turns = [[t.start, t.end, t.speaker] for t in found.turns]
        # The cohort the match measures voices against: made once (seconds), then read
        # from the home; not abandoned when cancelled (it writes its file whole).
        outsiders = await trio.to_thread.run_sync(lambda: voice_cohort(config.home))
        # The found voices go to the commit, which keeps them and names the speakers
        # after the owner's library only if the owner remembers voices (sql/0031).
        return Saved(
            "save_speakers_voices",
            (
                turns,
                found.speakers,
                found_voices(found.voices, turns),
                MATCH.threshold,
                MATCH.cohort_margin,
                outsiders,
                MATCH.top,
            ),
        )

    return diarize


def remote_step(config: Config, recognizer: RemoteRecognizer, *, diarized: bool = False) -> StepFn:
    async def recognize(job: Job, progress: Progress) -> Saved:
        language = job.inputs.get("language") or config.language
        options = recognition_options(config, job)
        async with blobs_of(config).local_file(job.inputs["audio_path"]) as audio:
            transcript = await recognizer.transcribe(audio, language, options)
        # A long text's alignment takes a while: off the event loop (abandoned, not
        # stopped, when cancelled; it only computes).
        transcript = await trio.to_thread.run_sync(
            lambda: aligned(transcript, options), abandon_on_cancel=True
        )
        return saved_transcript(transcript, skip_diarize=diarized and speakers_off(config, job))

    return recognize


def saved_transcript(transcript: Transcript, *, skip_diarize: bool = False) -> Saved:
    """The transcript as the commit stores it, cleaned of what PostgreSQL text and jsonb
    cannot hold (NUL, which a remote recognizer may send): what is left and still
    refused fails the attempt with the database's message. `skip_diarize`: the record
    goes on to `transcribed` at once (its speakers are off)."""
    return Saved(
        "save_transcript",
        (
            without_nul(transcript.text),
            without_nul(transcript.segments),
            transcript.language,
            transcript.model,
        ),
        TRANSCRIBED if skip_diarize else None,
    )


def without_nul(value: Any) -> Any:
    """`value` with NUL characters dropped from every string in it (lists, dicts)."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [without_nul(v) for v in value]
    if isinstance(value, dict):
        return {k: without_nul(v) for k, v in value.items()}
    return value
