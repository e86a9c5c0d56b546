"""CAM++'s windows in batches: a window embeds as itself, not as what it is batched with."""

from __future__ import annotations

import numpy as np
import pytest

from transcriber.audio.speakers_model import CamPlusPlus
from transcriber.audio.speakers_windows import (
    BATCH,
    _batches,
    embed_windows,
    window_features,
)


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("speakers", title)


def _voiced(seconds: float, seed: int) -> np.ndarray:
    """A voiced sound: harmonics of a pitch that glides, a tremor, a little noise."""
    rng = np.random.RandomState(seed)
    t = np.arange(int(seconds * 16000)) / 16000
    pitch = 120 + 40 * t / seconds
    phase = 2 * np.pi * np.cumsum(pitch) / 16000
    harmonics = sum(np.sin(k * phase) / k for k in range(1, 9))
    sound = 0.1 * harmonics * (1 + 0.5 * np.sin(2 * np.pi * 4 * t)) + 0.003 * rng.randn(len(t))
    return sound.astype(np.float32)


@scenario("A window embeds as itself, whatever it is embedded with")
def test_a_window_embeds_the_same_batched_or_alone() -> None:
    net = CamPlusPlus.load()
    samples = _voiced(6.0, 3)
    windows = [(0.0, 0.4), (1.0, 1.75), (2.0, 3.1), (3.5, 5.0), (5.2, 5.6)]
    together = embed_windows(net, samples, windows)
    alone = np.concatenate([embed_windows(net, samples, [w]) for w in windows])
    np.testing.assert_allclose(together, alone, rtol=0, atol=2e-4 * np.abs(alone).max())

    # Why a fixed length: the network has no mask, and the same short window unpadded (as
    # it was in a batch of windows as short as it, before) embeds otherwise.
    short = window_features(samples, [windows[0]])[0]
    a, b = net(short[None])[0], alone[0]
    assert a @ b / np.linalg.norm(a) / np.linalg.norm(b) < 0.99


@pytest.mark.parametrize("lengths", [[], [5], [3, 1, 3, 2, 3, 1], [7] * (2 * BATCH + 1)])
def test_batches_hold_windows_of_one_length(lengths: list[int]) -> None:
    batches = _batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(0 < len(b) <= BATCH and len({lengths[i] for i in b}) == 1 for b in batches)
