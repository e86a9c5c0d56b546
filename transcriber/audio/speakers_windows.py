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
QUIET_DB = 30.0
"""A window's frames this far below its loudest (by their filter banks' energy) are left
out of its embedding: the pauses inside it and the silence the VAD pads a stretch with
(up to 0.4 s each side) are no one's voice, yet CAM++'s pooling weighs them with the
speech, so that a one-word turn's window ("Yes.", half of it silence) embedded like other
short windows more than like its speaker. With speakers_clustering's voices apart
(APART_COSINE), on speakers_count's 76 conversations (its three earlier sets, all tuned on)
the count was right in 67 at 30 dB (mean DER 4.6 %), 66 at 40 dB (4.7 %), 61 at 20 dB
(5.0 %) and at most 63 with every frame; without voices apart, 61 at 30 or 40 dB and with
every frame alike. Real recordings' pauses are noise some 30–50 dB down: 30 dB leaves
them out where 40 dB would keep most."""
MIN_LOUD_FRAMES = 30
"""At least this many frames (0.3 s) are kept: a window with fewer loud ones is taken
whole, as before."""
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


def _loud(f: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The frames of `f` (log-mel filter banks) within QUIET_DB of its loudest, when at
    least MIN_LOUD_FRAMES are; else all of them."""
    energy = np.log(np.exp(f.astype(np.float64)).sum(axis=1))
    loud = energy >= energy.max() - QUIET_DB * np.log(10) / 10
    return f[loud] if loud.sum() >= MIN_LOUD_FRAMES else f


def window_features(
    samples: np.ndarray[Any, Any],
    windows: Sequence[tuple[float, float]],
    loud_only: bool = True,
) -> list[np.ndarray[Any, Any]]:
    """Each window's filter banks, mean-normalized; `loud_only`: its quiet frames left out
    (QUIET_DB). Overlapping windows (one speech
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
            f = _loud(f) if loud_only else f
            out.append(f - f.mean(axis=0, keepdims=True))
        i = j
    return out


def embed_windows(
    net: CamPlusPlus,
    samples: np.ndarray[Any, Any],
    windows: Sequence[tuple[float, float]],
    check: Callable[[], None] = lambda: None,
    threads: int = 1,
    loud_only: bool = True,
) -> np.ndarray[Any, Any]:
    """One embedding per window (times within `samples`, in order), of its loud frames
    (`loud_only`, QUIET_DB; the benchmark compares with all frames), in batches of like
    lengths, `threads` batches at a time. BLAS itself is kept to one thread meanwhile: its
    threads spin-wait between the network's many small matmuls, and on a busy machine
    (recognition beside, other processes) that made a forward pass 2–4 times slower than
    one thread; whole batches on threads of our own (numpy releases the GIL) do not wait
    on each other."""
    from threadpoolctl import threadpool_limits

    feats = window_features(samples, windows, loud_only)
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
