"""The count of speakers by the normalized maximum eigengap (NME-SC: Park, Han, Kumar and
Narayanan, "Auto-Tuning Spectral Clustering for Speaker Diarization Using Normalized
Maximum Eigengap", IEEE SPL 2019; NVIDIA NeMo's clustering uses it).

The windows' cosine affinity is binarized to each window's p most alike; for each p, the
Laplacian's largest gap among its smallest eigenvalues over its largest eigenvalue says
how cleanly that graph falls apart (g_p); the p of the least p / g_p is kept, and the
count is where that graph's largest gap is.

Not what `auto` uses: measured beside average linkage on bench-speakers' conversations
(speakers_clustering.APART_MARGIN), it counted fewer of them right (10 of 18 tuning, 15 of
31 held-out, against 13 and 23): on tens of windows of 1.5 s, half-overlapping, p / g_p
is nearly flat and its least falls on a p that cuts turns apart. It is kept to be
measured again (`transcriber bench-speakers --count-cache`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

NME_UNITS = 400
"""The count is found on an evenly spaced sample of at most this many windows: each p
costs an eigendecomposition of the sample's size."""
MAX_P_SHARE = 0.25
"""p is searched up to this share of the windows (NeMo's max_rp_threshold)."""
P_STEPS = 30
"""How many values of p are tried, evenly spaced (NeMo's sparse_search_volume)."""


def binarized(sim: np.ndarray[Any, Any], p: int) -> np.ndarray[Any, Any]:
    """Each row's p largest entries set to 1, the rest 0, made symmetric."""
    n = len(sim)
    out = np.zeros_like(sim)
    top = np.argpartition(-sim, min(p, n - 1), axis=1)[:, :p]
    out[np.arange(n)[:, None], top] = 1.0
    result: np.ndarray[Any, Any] = 0.5 * (out + out.T)
    return result


def eigengaps(affinity: np.ndarray[Any, Any], high: int) -> tuple[np.ndarray[Any, Any], float]:
    """The gaps between the unnormalized Laplacian's high + 1 smallest eigenvalues, and
    its largest eigenvalue."""
    laplacian = np.diag(affinity.sum(1)) - affinity
    lambdas = np.linalg.eigvalsh(laplacian)
    return np.diff(lambdas[: high + 1]), float(lambdas[-1])


def nme_count(x: np.ndarray[Any, Any], low: int, high: int) -> int:
    """The number of speakers among windows `x`, within low..high, by NME-SC."""
    n = len(x)
    units = x[:: max(1, -(-n // NME_UNITS))]
    units = units / np.maximum(np.linalg.norm(units, axis=1, keepdims=True), 1e-12)
    m = len(units)
    high = min(high, m - 1)
    if high <= 1:
        return max(1, min(low, n))
    sim = units @ units.T
    p_max = max(2, int(m * MAX_P_SHARE))
    best: tuple[float, int] = (np.inf, 2)
    for p in sorted({int(v) for v in np.linspace(2, p_max, P_STEPS)}):
        gaps, top = eigengaps(binarized(sim, p), high)
        ratio = (p / m) / max(gaps.max() / max(top, 1e-10), 1e-10)
        if ratio < best[0]:
            best = (ratio, p)
    gaps, _ = eigengaps(binarized(sim, best[1]), high)
    return int(np.argmax(gaps[low - 1 :])) + low
