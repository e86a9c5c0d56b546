"""Where recognition runs: TRANSCRIBER_DEVICE (auto, cpu, cuda) and
TRANSCRIBER_COMPUTE_TYPE (auto or a CTranslate2 compute type)."""

from __future__ import annotations

import functools

import attrs

from transcriber.config import Config

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
        raise DeviceUnavailable(
            f"TRANSCRIBER_DEVICE must be one of {', '.join(DEVICES)}, not {device!r}"
        )
    if device == "auto":
        device = "cuda" if cuda_devices > 0 else "cpu"
    elif device == "cuda" and cuda_devices == 0:
        raise DeviceUnavailable(
            "TRANSCRIBER_DEVICE=cuda, but CTranslate2 sees no CUDA device "
            "(set TRANSCRIBER_DEVICE=auto or cpu)"
        )
    if compute_type == "auto":
        compute_type = "float16" if device == "cuda" else "int8"
    return DeviceChoice(device, compute_type)


def device_for(config: Config) -> DeviceChoice:
    """The configured choice on this machine (CTranslate2 asked only when it matters)."""
    return choose_device(
        config.device, config.compute_type, cuda_devices() if config.device != "cpu" else 0
    )


def cuda_devices() -> int:
    """The CUDA devices CTranslate2 sees (0 when it was built without CUDA)."""
    import ctranslate2

    try:
        return int(ctranslate2.get_cuda_device_count())
    except RuntimeError:
        return 0


@functools.cache
def recognizer_info(config: Config) -> dict[str, str]:
    """What recognizes, for the log, /healthz and /metrics: the model's name, the device
    and compute type (`error` instead when the device setting cannot be met)."""
    if config.recognizer_url:
        return {"model": "remote", "device": "remote", "url": config.recognizer_url}
    from transcriber.audio.models import model_name

    info = {"model": model_name(config), "decoding": config.decoding}
    try:
        choice = device_for(config)
    except DeviceUnavailable as e:
        return {**info, "device": config.device, "error": str(e)}
    return {**info, "device": choice.device, "compute_type": choice.compute_type}
