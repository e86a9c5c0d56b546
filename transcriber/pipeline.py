"""The real pipeline: the step table with the audio steps."""

from __future__ import annotations

import logging

from actors import StepTable
from actors.log import event
from transcriber.config import Config
from transcriber.devices import recognizer_info
from transcriber.milestones import step_table
from transcriber.normalize import normalize_step
from transcriber.recognize import recognize_step
from transcriber.recognizer_process import ProcessRecognizer
from transcriber.remote import RemoteRecognizer, remote_step


def audio_steps(config: Config, recognizer: ProcessRecognizer | None = None) -> StepTable:
    """Recognition by the remote server when TRANSCRIBER_RECOGNIZER_URL is set, else by
    the local model in child processes (`recognizer`'s, when given: warm ones shared)."""
    event(logging.INFO, "recognizer", **recognizer_info(config))
    if config.recognizer_url:
        recognize = remote_step(config, RemoteRecognizer(config.recognizer_url,
                                                         config.recognizer_key))
    else:
        recognize = recognize_step(config, recognizer or ProcessRecognizer(config))
    return step_table(normalize=normalize_step(config), recognize=recognize,
                      lease_s=config.lease_s, renew_s=config.renew_s,
                      run_limit_s=config.run_limit_s,
                      run_limit_per_audio_s=config.run_limit_per_audio_s)
