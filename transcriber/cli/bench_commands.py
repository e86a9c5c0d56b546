"""The benchmarks: the queue (`bench`), recognition (`bench-audio`), the API
(`bench-api`). Each runs its own embedded database."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def bench(
    records: Annotated[int, typer.Option(help="records to drain")] = 5000,
    workers: Annotated[int, typer.Option(help="worker actors")] = 8,
    samples: Annotated[int, typer.Option(help="wake-up latency samples")] = 200,
    analyze: Annotated[bool, typer.Option(help="ANALYZE after the enqueue")] = True,
    plans: Annotated[bool, typer.Option(help="claim plans at 1M finished and a burst")] = True,
    processes: Annotated[
        int, typer.Option(help="also drain with the workers split over this many processes")
    ] = 2,
    peers: Annotated[
        bool, typer.Option(help="instead: rounds of ours, pgqueuer, procrastinate, one table")
    ] = False,
    rounds: Annotated[int, typer.Option(help="rounds with --peers (medians)")] = 3,
) -> None:
    """No-op steps through both milestones on a fresh embedded database."""
    if peers:
        from transcriber.bench.side_by_side import main as run_side_by_side

        raise typer.Exit(run_side_by_side(records, workers, samples, analyze, rounds))
    from transcriber.bench.throughput import main as run_bench

    raise typer.Exit(run_bench(records, workers, samples, analyze, plans, processes))


def bench_audio(
    minutes: Annotated[float, typer.Option(help="minutes for the ratio")] = 5.0,
    long_minutes: Annotated[float, typer.Option(help="minutes for peak RSS")] = 60.0,
    queue_files: Annotated[int, typer.Option(help="files submitted at once")] = 6,
    queue_minutes: Annotated[float, typer.Option(help="minutes of each")] = 5.0,
) -> None:
    """Raw faster-whisper (sequential, batched) against the service on the same file;
    the queue's throughput; peak RSS of a long recording."""
    from transcriber.bench.recognition import main as run_bench_audio

    raise typer.Exit(run_bench_audio(minutes, long_minutes, queue_files, queue_minutes))


def bench_speakers(
    conversations: Annotated[int, typer.Option(help="conversations per speaker count")] = 3,
    turns: Annotated[int, typer.Option(help="turns in each conversation")] = 16,
    speakers: Annotated[
        list[int] | None, typer.Option(help="speaker counts (repeat: --speakers 2 --speakers 4)")
    ] = None,
    recognition: Annotated[bool, typer.Option(help="time recognition of each file too")] = True,
    long_minutes: Annotated[
        float, typer.Option(help="instead: one conversation this long (memory, time)")
    ] = 0.0,
    count_cache: Annotated[
        Path | None,
        typer.Option(
            help="instead: the count's methods on a tuning and a held-out set, "
            "each conversation embedded once into this folder"
        ),
    ] = None,
) -> None:
    """Diarization on espeak-ng conversations of known turns: DER (missed, false alarm,
    confusion; 0.25 s collar), speaker counts, seconds, RTF and peak RSS beside
    recognition of the same file."""
    from transcriber.bench.speakers import bench, espeak_available, table

    if not espeak_available():
        typer.echo(
            "bench-speakers needs espeak-ng and sox (apt-get install espeak-ng sox)", err=True
        )
        raise typer.Exit(2)
    if count_cache is not None:
        from transcriber.bench.speakers_count import main as count_table

        typer.echo(count_table(count_cache))
        return
    if long_minutes > 0:
        from transcriber.bench.speakers import long_conversation

        typer.echo(table([long_conversation(long_minutes)]))
        return
    rows = bench(conversations, turns, speakers or [2, 4], recognition)
    typer.echo(table(rows))


def bench_subtitles(
    minutes: Annotated[float, typer.Option(help="minutes of speech (at least)")] = 5.0,
    vocabulary: Annotated[bool, typer.Option(help="the vocabulary's clips too")] = True,
) -> None:
    """Subtitle profiles' rules broken per cue and words kept, on recognized and aligned
    transcripts of speech made here; alignment's word-start error; the vocabulary's
    effect on clips with rare names."""
    from transcriber.bench.speakers import espeak_available
    from transcriber.bench.subtitles import main as run_bench_subtitles

    if not espeak_available():
        typer.echo(
            "bench-subtitles needs espeak-ng and sox (apt-get install espeak-ng sox)", err=True
        )
        raise typer.Exit(2)
    raise typer.Exit(run_bench_subtitles(minutes, vocabulary))


def bench_api(
    clients: Annotated[int, typer.Option(help="concurrent card readers")] = 50,
    seconds: Annotated[float, typer.Option(help="how long they read")] = 20.0,
    every: Annotated[
        float, typer.Option(help="seconds between one open-loop reader's reads")
    ] = 0.5,
    upload_gib: Annotated[float, typer.Option(help="size of the big upload")] = 1.0,
) -> None:
    """Card latency under concurrent clients, closed and open loop, alone and during
    recognition; upload peak memory."""
    from transcriber.bench.api_latency import main as run_bench_api

    raise typer.Exit(run_bench_api(clients, seconds, upload_gib, every))


def bench_live(
    sessions: Annotated[
        list[int] | None, typer.Option(help="sessions at once (repeat: --sessions 2 --sessions 3)")
    ] = None,
    policy: Annotated[
        list[str] | None, typer.Option(help="live text policies side by side: agreement, whole")
    ] = None,
    minutes: Annotated[
        float, typer.Option(help="also one session this long: its delay per minute")
    ] = 0.0,
    material: Annotated[
        list[str] | None,
        typer.Option(
            help="materials streamed (repeat): en.ogg, ru.ogg, espeak, espeak-b, espeak-c"
        ),
    ] = None,
    batch: Annotated[
        bool, typer.Option(help="also batch recognition's time alone and under 1 and 2 sessions")
    ] = False,
) -> None:
    """Live sessions of the real SDK at real-time pace against `serve`: word latency,
    live WER against the reference and a batch transcript, CPU per audio second, and
    the sessions held at once in real time, per policy."""
    from transcriber.bench.live import main as run_bench_live

    raise typer.Exit(
        run_bench_live(
            sessions or [1, 2, 3], policy or ["agreement", "whole"], minutes, material, batch
        )
    )
