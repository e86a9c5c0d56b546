"""`transcriber models`: the speech models this home has and the one in use."""

from __future__ import annotations

import typer

from transcriber.config import Config


def models() -> None:
    """The models in TRANSCRIBER_HOME/models, and the one TRANSCRIBER_MODEL names."""
    from transcriber.audio.models import NAMES, model_name, present_models

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


def _is_folder(model: str | None) -> bool:
    from transcriber.audio.models import BUNDLED_ALIASES, NAMES

    return model not in BUNDLED_ALIASES and model not in NAMES
