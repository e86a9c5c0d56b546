"""Recordings in and out from the command line: `submit` (for the daemon), `transcribe`
(one shot, in this process) and `delete`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import trio
import typer

from transcriber.cli.running import (
    ALIGN_HELP,
    LANGUAGE_HELP,
    SPEAKERS_HELP,
    TASK_HELP,
    VOCABULARY_HELP,
    Refused,
    environment_failures,
    fail,
    language_option,
    operator_name,
    recognition_options,
    record_id,
    with_database,
)
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.subtitles.profiles import NAMES, UnknownProfile
from transcriber.subtitles.profiles import profile as subtitles_profile

SUBTITLES_HELP = (
    f"with --format srt or vtt, the cues' rules: {', '.join(NAMES)} "
    "(default general; segments: one cue per recognized segment)"
)


def submit(
    files: Annotated[
        list[Path], typer.Argument(exists=True, dir_okay=False, readable=True, metavar="FILE...")
    ],
    owner: Annotated[str | None, typer.Option(help="owner name (default: local)")] = None,
    title: Annotated[str | None, typer.Option(help="title of each recording")] = None,
    language: Annotated[str | None, typer.Option(help=LANGUAGE_HELP)] = None,
    task: Annotated[str, typer.Option(help=TASK_HELP)] = "transcribe",
    speakers: Annotated[str | None, typer.Option(help=SPEAKERS_HELP)] = None,
    vocabulary: Annotated[str | None, typer.Option(help=VOCABULARY_HELP)] = None,
    align: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, readable=True, help=ALIGN_HELP)
    ] = None,
    wait: Annotated[
        bool,
        typer.Option(help="wait until each is transcribed or stopped (a daemon does the work)"),
    ] = False,
) -> None:
    """Accept files as recordings for the daemon to transcribe; prints each id."""
    from transcriber.intake import accept_file
    from transcriber.owners import local_owner, owner_named
    from transcriber.pipeline.operator import card

    config = Config.from_env()
    # None when not given: the owner's default language, else the service's
    # (TRANSCRIBER_LANGUAGE, applied by the recognize step).
    language = language_option(language)
    options = recognition_options(task, speakers, vocabulary, align)

    async def work(db: Database) -> int:
        if owner is None:
            owner_id = await local_owner(db)
        else:
            found = await owner_named(db, owner)
            if found is None:
                raise Refused(f"no owner {owner!r} (transcriber owner add NAME)")
            owner_id = found
        ids = []
        for path in files:
            rid = await accept_file(
                db,
                config,
                path,
                owner_id,
                language=language,
                title=title,
                options=options,
            )
            typer.echo(f"{rid}  {path.name}")
            ids.append(rid)
        stopped = 0
        for rid in ids if wait else []:
            while True:
                c = await card(db, rid)
                assert c is not None
                if c["done"] or c["stopped"]:
                    break
                await trio.sleep(0.5)
            state = "transcribed" if c["done"] else f"stopped ({c['stopped']['reason']})"
            stopped += not c["done"]
            typer.echo(f"{rid}  {state}")
        return stopped

    if with_database(work, needs_home=True):
        raise typer.Exit(1)


def transcribe(
    file: Annotated[
        Path,
        typer.Argument(exists=True, dir_okay=False, readable=True, help="an audio or video file"),
    ],
    language: Annotated[str | None, typer.Option(help=LANGUAGE_HELP)] = None,
    fmt: Annotated[str, typer.Option("--format", help="txt, srt, vtt or json")] = "txt",
    task: Annotated[str, typer.Option(help=TASK_HELP)] = "transcribe",
    speakers: Annotated[str | None, typer.Option(help=SPEAKERS_HELP)] = None,
    subtitles: Annotated[str | None, typer.Option(help=SUBTITLES_HELP)] = None,
    vocabulary: Annotated[str | None, typer.Option(help=VOCABULARY_HELP)] = None,
    align: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, readable=True, help=ALIGN_HELP)
    ] = None,
) -> None:
    """One shot: run the pipeline on FILE and print its transcript (exit 1 if stopped)."""
    from transcriber.daemon import require_model
    from transcriber.formats import FORMATS, render
    from transcriber.pipeline.audio_steps import audio_steps
    from transcriber.pipeline.oneshot import ProgressBar, transcribe_file

    if fmt not in FORMATS:
        fail(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}", 1)
    try:
        rules = subtitles_profile(subtitles) if fmt in ("srt", "vtt") else None
    except UnknownProfile as e:
        fail(str(e), 2)
    if subtitles is not None and fmt not in ("srt", "vtt"):
        fail("--subtitles applies to --format srt or vtt", 2)
    options = recognition_options(task, speakers, vocabulary, align)
    config = Config.from_env()
    # None when not given: the owner's default language, else the service's
    # (TRANSCRIBER_LANGUAGE, applied by the recognize step).
    language = language_option(language)
    try:
        require_model(config)
    except environment_failures() as e:
        fail(str(e), 2)
    # The recognizer child loads the model while the database starts and the audio is
    # normalized, instead of after.
    steps = audio_steps(config, warm=1)
    done = with_database(
        lambda db: transcribe_file(
            db, config, steps, file, language=language, options=options, on_card=ProgressBar()
        ),
        needs_home=True,
    )
    if done.transcript is None:
        stop = done.card["stopped"]
        fail(
            f"{file.name}: stopped at {done.card['milestone']} ({stop['reason']}): {stop['error']}",
            1,
        )
    t = done.transcript
    stop = done.card["stopped"]
    if stop:
        typer.echo(f"{file.name}: speakers not found ({stop['reason']}): {stop['error']}", err=True)
    segments = t["segments"]
    if t["turns"] is not None:
        from transcriber.audio.speakers import Turn, assign

        segments = assign(segments, [Turn(*turn) for turn in t["turns"]])
    if rules is not None:
        from transcriber.subtitles.cues import render as render_cues

        typer.echo(render_cues(fmt, segments, rules), nl=False)
        return
    typer.echo(
        render(
            fmt,
            t["text"],
            segments,
            id=done.card["id"],
            language=t["language"],
            model=t["model"],
            duration_s=done.card["duration_s"],
        ),
        nl=False,
    )


def delete(
    recordings: Annotated[list[str] | None, typer.Argument(metavar="ID...")] = None,
    list_deleted: Annotated[
        bool, typer.Option("--list", help="show the records deleted last instead")
    ] = False,
) -> None:
    """Delete records of any owner: the row, transcript, corrections, share links and
    stored bytes; journaled `deleted` with your name. Exit 1 if any id was unknown."""
    from transcriber.pipeline.deletions import delete_any, deletions
    from transcriber.storage.configured import blobs_of

    if list_deleted:
        for d in with_database(deletions):
            detail = d["detail"]
            who = detail.get("operator") or detail.get("owner_id")
            typer.echo(
                f"{d['recording_id']}  {d['at'].isoformat(timespec='seconds')}  "
                f"{d['origin']:<8} by={detail.get('by')}:{who}  size={detail.get('size_bytes')}"
            )
        return
    if not recordings:
        fail("name the records to delete (IDs), or --list", 1)
    ids = [record_id(r) for r in recordings]
    config = Config.from_env()

    async def work(db: Database) -> int:
        gone = await delete_any(db, blobs_of(config), ids, by=operator_name())
        for d in gone:
            typer.echo(f"deleted {d.id} ({d.size_bytes} bytes, {len(d.files)} files)")
            for ref in d.kept:
                typer.echo(
                    f"transcriber: {ref} stays until a daemon's next removal round", err=True
                )
        unknown = [i for i in ids if i not in {d.id for d in gone}]
        for rid in unknown:
            typer.echo(f"transcriber: no record {rid}", err=True)
        return len(unknown)

    if with_database(work, needs_home=True):
        raise typer.Exit(1)
