"""Sound to text: decoding, recognition (local Whisper in child processes, or a remote
OpenAI-compatible server), models and devices."""
