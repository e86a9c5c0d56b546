"""The real pipeline: the step table with the audio steps."""

from __future__ import annotations

from actors import StepTable
from transcriber.config import Config
from transcriber.milestones import step_table
from transcriber.normalize import normalize_step
from transcriber.recognize import WhisperRecognizer, recognize_step


def audio_steps(config: Config) -> StepTable:
    return step_table(normalize=normalize_step(config),
                      recognize=recognize_step(config, WhisperRecognizer(config)))
