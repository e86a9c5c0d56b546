"""Diarization's windows: where there is speech, the 1.5 s windows cut from it, and an
embedding per window.

Silero VAD (the ONNX copy inside faster-whisper, on onnxruntime) finds speech, a few
minutes of audio at a time; each speech stretch is cut into 1.5 s windows every 0.75 s;
CAM++ (speakers_model.py, numpy) embeds each window, in batches on threads of our own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from transcriber.audio.speakers_model import SAMPLE_RATE, CamPlusPlus, fbank

WINDOW_S = 1.5
SHIFT_S = 0.75
BATCH = 16
"""Windows embedded at once (tens of MB of activations), a batch on each of the
diarization's threads."""
RUN_WINDOWS = 64
"""Overlapping windows whose filter banks are computed in one pass (~50 s of speech, ~10 MB
of frames): a long stretch of speech is taken in pieces, so memory stays bounded."""
VAD_PIECE_S = 120
"""Silero VAD is run on this much audio at a time: faster-whisper's runs its network on up
to 10,000 chunks (320 s) at once, and on a 10-minute window that took 200 MB more than on
90 s (peak RSS 350 MB against 144 MB); a stretch the piece's end cuts is joined again."""
CUT_JOIN_S = 0.5
"""The VAD, started afresh at a piece's start, finds speech that runs across it up to a
few tenths of a second late (0.21 s on bench-speakers' conversations): a stretch that
starts this soon after the cut continues the one the cut ended."""


def speech_stretches(
    samples: np.ndarray[Any, Any], piece_s: int = VAD_PIECE_S
) -> list[tuple[float, float]]:
    """(start, end) seconds of speech in `samples` by Silero VAD (faster-whisper's ONNX),
    `piece_s` at a time."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    out: list[tuple[float, float]] = []
    piece = piece_s * SAMPLE_RATE
    for first in range(0, len(samples), piece):
        part = samples[first : first + piece]
        if len(part) < SAMPLE_RATE // 10:
            break
        stamps = get_speech_timestamps(
            part,
            VadOptions(threshold=0.5, min_speech_duration_ms=250, min_silence_duration_ms=100),
        )
        cut = first / SAMPLE_RATE
        for n, stamp in enumerate(stamps):
            start, end = (
                (first + stamp["start"]) / SAMPLE_RATE,
                (first + stamp["end"]) / SAMPLE_RATE,
            )
            across = n == 0 and out and out[-1][1] >= cut - 0.01 and start <= cut + CUT_JOIN_S
            if across:
                out[-1] = (out[-1][0], max(out[-1][1], end))  # one stretch across the cut
            else:
                out.append((start, end))
    return out


def windows_of(start: float, end: float) -> list[tuple[float, float]]:
    """1.5 s windows every 0.75 s over one stretch, the last one flush with its end."""
    out = []
    t = start
    while t + WINDOW_S < end:
        out.append((t, t + WINDOW_S))
        t += SHIFT_S
    if t < end:
        out.append((max(start, end - WINDOW_S), end))
    return out


def window_features(
    samples: np.ndarray[Any, Any], windows: Sequence[tuple[float, float]]
) -> list[np.ndarray[Any, Any]]:
    """Each window's filter banks, mean-normalized. Overlapping windows (one speech
    stretch's) share one filter-bank pass over their run, sliced per window: frames are
    computed independently of each other, so a slice on the run's 10 ms frame grid is
    exactly the window's own; a window off the grid (a stretch's last, flush with its
    end) has its own pass."""
    out: list[np.ndarray[Any, Any]] = []
    i = 0
    while i < len(windows):
        run_start, run_end = windows[i]
        j = i + 1
        while j < len(windows) and windows[j][0] < run_end and j - i < RUN_WINDOWS:
            run_end = max(run_end, windows[j][1])
            j += 1
        first = int(run_start * SAMPLE_RATE)
        banks = fbank(samples[first : int(run_end * SAMPLE_RATE)])
        for start, end in windows[i:j]:
            a, b = int(start * SAMPLE_RATE), int(end * SAMPLE_RATE)
            frames = max(0, 1 + (b - a - 400) // 160)
            at, off_grid = divmod(a - first, 160)
            if off_grid or at + frames > len(banks):
                f = fbank(samples[a:b])
            else:
                f = banks[at : at + frames]
            if len(f) == 0:
                f = np.zeros((1, 80), dtype=np.float32)
            out.append(f - f.mean(axis=0, keepdims=True))
        i = j
    return out


def embed_windows(
    net: CamPlusPlus,
    samples: np.ndarray[Any, Any],
    windows: Sequence[tuple[float, float]],
    check: Callable[[], None] = lambda: None,
    threads: int = 1,
) -> np.ndarray[Any, Any]:
    """One embedding per window (times within `samples`, in order), in batches of like
    lengths, `threads` batches at a time. BLAS itself is kept to one thread meanwhile: its
    threads spin-wait between the network's many small matmuls, and on a busy machine
    (recognition beside, other processes) that made a forward pass 2–4 times slower than
    one thread; whole batches on threads of our own (numpy releases the GIL) do not wait
    on each other."""
    from threadpoolctl import threadpool_limits

    feats = window_features(samples, windows)
    out = np.zeros((len(feats), 192), dtype=np.float32)
    order = sorted(range(len(feats)), key=lambda i: len(feats[i]))
    batches = [order[b : b + BATCH] for b in range(0, len(order), BATCH)]

    def embed(idx: list[int]) -> np.ndarray[Any, Any]:
        check()
        longest = max(len(feats[i]) for i in idx)
        batch = np.zeros((len(idx), longest, 80), dtype=np.float32)
        for row, i in enumerate(idx):
            batch[row, : len(feats[i])] = feats[i]
        result: np.ndarray[Any, Any] = net(batch)
        return result

    with threadpool_limits(limits=1, user_api="blas"):
        if threads <= 1 or len(batches) <= 1:
            for idx in batches:
                out[idx] = embed(idx)
            return out
        pool = ThreadPoolExecutor(threads, thread_name_prefix="embed")
        try:
            for idx, emb in zip(batches, pool.map(embed, batches), strict=True):
                out[idx] = emb
        finally:
            pool.shutdown(cancel_futures=True)
    return out
