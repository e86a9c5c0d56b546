"""Where recognition runs: TRANSCRIBER_DEVICE (auto, cpu, cuda) and
TRANSCRIBER_COMPUTE_TYPE (auto or a CTranslate2 compute type)."""

from __future__ import annotations

import attrs

DEVICES = ("auto", "cpu", "cuda")


class DeviceUnavailable(Exception):
    pass


@attrs.frozen
class DeviceChoice:
    device: str
    compute_type: str


def choose_device(device: str, compute_type: str, cuda_devices: int) -> DeviceChoice:
    """auto: CUDA with float16 when CTranslate2 sees a GPU, else the CPU with int8 (the
    fastest each has for Whisper at a word error rate within noise of float32)."""
    if device not in DEVICES:
        raise DeviceUnavailable(f"TRANSCRIBER_DEVICE must be one of {', '.join(DEVICES)}, "
                                f"not {device!r}")
    if device == "auto":
        device = "cuda" if cuda_devices > 0 else "cpu"
    elif device == "cuda" and cuda_devices == 0:
        raise DeviceUnavailable("TRANSCRIBER_DEVICE=cuda, but CTranslate2 sees no CUDA device "
                                "(set TRANSCRIBER_DEVICE=auto or cpu)")
    if compute_type == "auto":
        compute_type = "float16" if device == "cuda" else "int8"
    return DeviceChoice(device, compute_type)


def cuda_devices() -> int:
    """The CUDA devices CTranslate2 sees (0 when it was built without CUDA)."""
    import ctranslate2

    try:
        return ctranslate2.get_cuda_device_count()
    except RuntimeError:
        return 0
