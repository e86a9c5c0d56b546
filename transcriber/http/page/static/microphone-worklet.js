// The page's microphone, in the audio thread: whatever rate the browser captures at
// (48 kHz mostly, 44.1 kHz on some devices) resampled to the realtime protocol's
// 16-bit mono PCM at 24 kHz, and posted in pieces of 100 ms with their level.
//
// The graph low-passes the input below 24 kHz's Nyquist before this node
// (microphone.js), so linear interpolation between input samples is enough here.
"use strict";

const RATE = 24000;
const PIECE = RATE / 10; // 100 ms

class PcmResampler extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / RATE; // input samples per output sample
    this.pos = 0; // where the next output sample falls, in input samples from `last`
    this.last = 0; // the input sample before the current block
    this.piece = new Int16Array(PIECE);
    this.filled = 0;
    this.sumSquares = 0;
    this.stopped = false;
    this.port.onmessage = (ev) => {
      // "flush": what is left of the piece goes now (at Stop), and nothing after it.
      if (ev.data === "flush") { this.post(); this.stopped = true; this.port.postMessage("flushed"); }
    };
  }

  post() {
    if (!this.filled) return;
    const pcm = this.piece.slice(0, this.filled);
    const level = Math.sqrt(this.sumSquares / this.filled);
    this.port.postMessage({ pcm: pcm.buffer, level }, [pcm.buffer]);
    this.filled = 0;
    this.sumSquares = 0;
  }

  process(inputs) {
    if (this.stopped) return false;
    const channels = inputs[0];
    if (!channels || !channels.length) return true;
    const n = channels[0].length;
    // Mono: the channels' mean.
    const x = new Float32Array(n);
    for (const c of channels) for (let i = 0; i < n; i++) x[i] += c[i] / channels.length;
    // Positions in input samples: 0 is `last` (the previous block's end), 1 is x[0].
    let pos = this.pos;
    while (pos < n) {
      const i = Math.floor(pos);
      const a = i === 0 ? this.last : x[i - 1];
      const v = a + (x[i] - a) * (pos - i);
      const s = Math.max(-1, Math.min(1, v));
      this.piece[this.filled++] = s < 0 ? s * 0x8000 : s * 0x7fff;
      this.sumSquares += s * s;
      if (this.filled === PIECE) this.post();
      pos += this.step;
    }
    this.pos = pos - n;
    this.last = x[n - 1];
    return true;
  }
}

registerProcessor("pcm-24k", PcmResampler);
