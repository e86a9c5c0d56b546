"""Which Whisper model recognizes: TRANSCRIBER_MODEL names a CTranslate2 model folder or
a faster-whisper model name. A name is looked up in TRANSCRIBER_HOME/models/<name>,
fetched there once when the network allows (faster-whisper's own download, into a
partial folder renamed when complete); `base` and no model at all are the bundled
Whisper base, which needs no network ever."""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import attrs

from transcriber.audio.recognize import BUNDLED_NAME, ModelUnavailable, bundled_model
from transcriber.config import Config
from transcriber.storage.files import private_dir

NAMES = (
    "tiny",
    "tiny.en",
    "base",
    "base.en",
    "small",
    "small.en",
    "medium",
    "medium.en",
    "large-v1",
    "large-v2",
    "large-v3",
    "large",
    "distil-large-v2",
    "distil-large-v3",
    "distil-large-v3.5",
    "distil-medium.en",
    "distil-small.en",
    "large-v3-turbo",
    "turbo",
)
"""faster-whisper's model names (faster_whisper.utils.available_models())."""
BUNDLED_ALIASES = (None, "base", BUNDLED_NAME)


@attrs.frozen
class ResolvedModel:
    path: Path
    name: str
    """As stored with each transcript: the folder's or the model's name."""


def model_name(config: Config) -> str:
    """The name transcripts will carry, without joining or fetching anything."""
    if config.model in BUNDLED_ALIASES:
        return BUNDLED_NAME
    assert config.model is not None
    return Path(config.model).name


def fetch_with_faster_whisper(name: str, dest: Path) -> None:
    from faster_whisper import download_model

    with warnings.catch_warnings():
        # faster-whisper passes an argument huggingface_hub now ignores, with a warning.
        warnings.simplefilter("ignore", UserWarning)
        download_model(name, output_dir=str(dest))


def make_private(folder: Path) -> None:
    """Everything a fetch wrote under `folder` readable by its owner only (files 0600,
    folders 0700): the fetch writes with the process's umask."""
    for path in folder.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() else 0o600)


def resolve_model(
    config: Config, fetch: Callable[[str, Path], None] = fetch_with_faster_whisper
) -> ResolvedModel:
    """The model's folder. Blocking (joins the bundled model, or fetches a named one on
    first use): call it from a thread. Raises ModelUnavailable with one line that says
    what to do."""
    wanted = config.model
    if wanted in BUNDLED_ALIASES:
        return ResolvedModel(bundled_model(config.models), BUNDLED_NAME)
    assert wanted is not None
    if os.sep in wanted or wanted.startswith(".") or Path(wanted).expanduser().is_dir():
        path = Path(wanted).expanduser()
        return ResolvedModel(path, path.name)
    if wanted not in NAMES:
        raise ModelUnavailable(
            f"TRANSCRIBER_MODEL={wanted!r} is neither a model folder nor "
            f"a faster-whisper model name ({', '.join(NAMES)})"
        )
    target = config.models / wanted
    if (target / "model.bin").exists():
        return ResolvedModel(target, wanted)
    partial = config.models / f".{wanted}.{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    private_dir(partial)
    try:
        fetch(wanted, partial)
        if not (partial / "model.bin").exists():
            raise ModelUnavailable(f"the fetched model {wanted!r} has no model.bin")
        make_private(partial)
        partial.rename(target)
    except Exception as e:
        shutil.rmtree(partial, ignore_errors=True)
        if (target / "model.bin").exists():  # a concurrent fetch won
            return ResolvedModel(target, wanted)
        raise ModelUnavailable(
            f"model {wanted!r} is not in {target} and could not be fetched "
            f"({type(e).__name__}); without network, copy a CTranslate2 Whisper model "
            f"folder there or set TRANSCRIBER_MODEL to its folder"
        ) from e
    return ResolvedModel(target, wanted)


def present_models(models: Path) -> list[tuple[str, int]]:
    """The model folders under `models` (name, bytes), by name."""
    found = []
    for folder in sorted(models.iterdir()) if models.is_dir() else []:
        if folder.is_dir() and not folder.name.startswith(".") and (folder / "model.bin").exists():
            size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
            found.append((folder.name, size))
    return found
