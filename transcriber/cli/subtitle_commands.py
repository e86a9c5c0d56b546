"""`transcriber subtitles check FILE`: every rule of a subtitle profile a file breaks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from transcriber.subtitles import check as checker
from transcriber.subtitles import profiles

subtitles_app = typer.Typer(no_args_is_help=True, help="Subtitles by a broadcaster's rules.")

PROFILE_HELP = f"the rules to check: {', '.join(profiles.PROFILES)}"


@subtitles_app.command()
def check(
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="an SRT or VTT file")
    ],
    profile: Annotated[str, typer.Option(help=PROFILE_HELP)] = profiles.DEFAULT,
) -> None:
    """Print every rule FILE breaks with its cue's number; exit 1 if any, 0 if none
    (2: not a profile, or not a subtitle file)."""
    rules = profiles.PROFILES.get(profile)
    if rules is None:
        typer.echo(
            f"unknown profile {profile!r}; choose from {', '.join(profiles.PROFILES)}", err=True
        )
        raise typer.Exit(2)
    try:
        cues = checker.parse(file.read_text(encoding="utf-8-sig", errors="replace"))
    except checker.NotSubtitles as e:
        typer.echo(f"{file.name}: {e}", err=True)
        raise typer.Exit(2) from None
    broken = checker.check(cues, rules)
    for b in broken:
        typer.echo(f"{file.name}: cue {b.cue}: {b.rule}: {b.detail}")
    bad = len({b.cue for b in broken})
    typer.echo(f"{file.name}: {len(cues) - bad} of {len(cues)} cues keep {rules.name}'s rules")
    raise typer.Exit(1 if broken else 0)
