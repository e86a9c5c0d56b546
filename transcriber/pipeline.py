"""The real pipeline: the step table with the audio steps."""

from __future__ import annotations

from actors import StepTable
from transcriber.config import Config
from transcriber.milestones import step_table
from transcriber.models import model_name
from transcriber.normalize import normalize_step
from transcriber.recognize import recognize_step
from transcriber.recognizer_process import ProcessRecognizer
from transcriber.remote import RemoteRecognizer, remote_step


def audio_steps(config: Config, recognizer: ProcessRecognizer | None = None, *,
                warm: int = 0) -> StepTable:
    """Recognition by the remote server when TRANSCRIBER_RECOGNIZER_URL is set, else by
    the local model in child processes (`recognizer`'s, when given: warm ones shared).

    `warm` children start loading the model now, so the first recognitions do not wait
    for it (about a second for base, much longer for a large model); they load at the
    children's low priority while the service starts."""
    if config.recognizer_url:
        recognize = remote_step(config, RemoteRecognizer(config.recognizer_url,
                                                         config.recognizer_key))
    else:
        recognizer = recognizer or ProcessRecognizer(config)
        recognizer.warm(warm, wait=False)
        recognize = recognize_step(config, recognizer)
    return step_table(normalize=normalize_step(config), recognize=recognize,
                      lease_s=config.lease_s, renew_s=config.renew_s,
                      run_limit_s=config.run_limit_s,
                      run_limit_per_audio_s=config.run_limit_per_audio_s)


def recognizer_name(config: Config) -> str:
    """The model name the configured recognizer writes into the transcripts it makes."""
    if config.recognizer_url:
        return RemoteRecognizer(config.recognizer_url).model_name
    return model_name(config)
