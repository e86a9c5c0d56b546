// The page's microphone (/microphone; transcriber/http/page/microphone.py): Record
// takes the microphone, an AudioWorklet (microphone-worklet.js) makes it 24 kHz 16-bit
// PCM in pieces of 100 ms, and each piece goes to the live socket as OpenAI's realtime
// `input_audio_buffer.append`; the turns' text comes back as captions. Turns: the
// server's own voice detection when it takes `server_vad`; else this page commits a
// turn when its level meter has heard 0.7 s of quiet after speech. Stop commits what
// is left, waits a little for its captions, and opens the session's record (or the
// list, where it appears).
"use strict";
(function () {
  const root = document.getElementById("microphone");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const words = JSON.parse($("microphone-words").textContent);
  const startButton = $("record-start");
  const stopButton = $("record-stop");
  const language = $("live-language");
  const statusLine = $("record-status");
  const errorLine = $("record-error");
  const meter = $("level");
  const elapsed = $("elapsed");
  const captions = $("captions");

  const RATE = 24000;
  const PIECES_PER_S = 10;
  const QUIET_PIECES = 7; // 0.7 s below the speech level after speech ends a turn
  const MIN_TURN_PIECES = 3; // a turn shorter than this is not worth a commit
  const MAX_TURN_PIECES = 30 * PIECES_PER_S; // a long monologue is committed anyway
  const IDLE_PIECES = 10 * PIECES_PER_S; // silence the recognizer forgets (kept still)
  const EARLY_PIECES = 50; // pieces held while the session is being set up
  const FINISH_WAIT_MS = 15000; // at Stop, how long the last captions are waited for
  const CLOSE_WAIT_MS = 3000;

  let rec = null; // the recording under way

  // The service's codes for a session it ends with its audio kept (transcriber/live/endings.py).
  const KEPT_ENDINGS = {
    session_too_long: "too_long",
    insufficient_quota: "quota",
    server_shutting_down: "shutdown",
    invalid_api_key: "revoked",
    session_idle: "idle",
    storage_unavailable: "storage",
    session_lost: "lost",
  };

  function say(text) { statusLine.textContent = text; }
  function fail(text) { errorLine.textContent = text; }

  function clock(seconds) {
    const s = Math.floor(seconds);
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    const pad = (n) => String(n).padStart(2, "0");
    return h ? `${h}:${pad(m)}:${pad(s % 60)}` : `${m}:${pad(s % 60)}`;
  }

  function base64(buffer) {
    const bytes = new Uint8Array(buffer);
    let text = "";
    for (let i = 0; i < bytes.length; i += 0x8000) {
      text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(text);
  }

  function micRefusal(e) {
    const name = e && e.name;
    if (name === "NotAllowedError" || name === "SecurityError") return words.refused_mic;
    if (name === "NotFoundError" || name === "OverconstrainedError") return words.no_mic;
    return words.busy_mic;
  }

  // --- captions --------------------------------------------------------------------------

  function line(item) {
    for (const p of captions.querySelectorAll("p[data-item]")) {
      if (p.dataset.item === item) return p;
    }
    const empty = $("captions-empty");
    if (empty) empty.remove();
    const p = document.createElement("p");
    p.dataset.item = item;
    p.className = "pending";
    captions.appendChild(p);
    return p;
  }

  function completed(item, text) {
    const p = line(item);
    p.className = "";
    if (text.trim()) p.textContent = text.trim();
    else p.remove();
  }

  // --- the socket --------------------------------------------------------------------------

  function send(r, event) {
    if (r.socket.readyState === WebSocket.OPEN) r.socket.send(JSON.stringify(event));
  }

  // The session: the server's voice detection if it takes it, else turns committed here.
  // An update is taken whole or not at all, so the second asks without it.
  function configure(r, serverVad) {
    const transcription = { model: "whisper-1" };
    if (r.language) transcription.language = r.language;
    r.setup = serverVad ? "setup-server-vad" : "setup-commits";
    send(r, {
      type: "session.update",
      event_id: r.setup,
      session: {
        type: "transcription",
        audio: {
          input: {
            format: { type: "audio/pcm", rate: RATE },
            transcription,
            turn_detection: serverVad ? { type: "server_vad" } : null,
          },
        },
      },
    });
  }

  function onEvent(r, event) {
    const kind = event.type;
    if (kind === "session.created") {
      r.recordId = (event.session && event.session.record_id) || null;
      configure(r, true);
    } else if (kind === "session.updated") {
      if (event.session && event.session.record_id) r.recordId = event.session.record_id;
      if (!r.configured) {
        r.configured = true;
        const input = ((event.session || {}).audio || {}).input || {};
        r.serverVad = !!input.turn_detection;
        say(r.serverVad ? words.recording_vad : words.recording);
        const early = r.early;
        r.early = [];
        for (const piece of early) stream(r, piece);
      }
    } else if (kind === "error") {
      refused(r, event.error || {});
    } else if (kind === "input_audio_buffer.committed") {
      line(event.item_id);
      r.pending.add(event.item_id);
      r.committing = false;
      settle(r);
    } else if (kind === "input_audio_buffer.speech_started") {
      if (event.item_id) line(event.item_id);
    } else if (kind === "conversation.item.input_audio_transcription.delta") {
      const p = line(event.item_id);
      p.textContent += event.delta || "";
    } else if (kind === "conversation.item.input_audio_transcription.completed") {
      completed(event.item_id, event.transcript || "");
      r.pending.delete(event.item_id);
      settle(r);
    } else if (kind === "conversation.item.input_audio_transcription.failed") {
      const p = line(event.item_id);
      if (!p.textContent) p.textContent = words.turn_failed;
      p.className = "failed";
      r.pending.delete(event.item_id);
      settle(r);
    }
  }

  function refused(r, error) {
    if (!r.configured && error.event_id === "setup-server-vad") {
      configure(r, false); // the server commits no turns itself: this page will
      return;
    }
    if (error.code === "input_audio_buffer_commit_empty") {
      r.committing = false; // nothing new since the last turn (a commit at Stop)
      settle(r);
      return;
    }
    if (error.code in KEPT_ENDINGS) {
      // The service ends the session and keeps what was recorded: its record's page.
      fail(words[KEPT_ENDINGS[error.code]]);
      stop();
      return;
    }
    if (error.code === "session_deleted") {
      r.endedBy = words.deleted; // nothing is kept: the socket's close shows it
      return;
    }
    if (error.code === "live_transcription_stopped") {
      fail(words.live_stopped); // recording goes on
      return;
    }
    fail(words.service_said.replace("{why}", error.message || error.code || "?"));
    if (!r.configured) stop();
  }

  // --- the audio ---------------------------------------------------------------------------

  function showLevel(level) {
    const db = 20 * Math.log10(Math.max(level, 1e-6));
    meter.value = Math.max(0, Math.min(1, (db + 60) / 60));
  }

  function onPiece(r, data) {
    if (data === "flushed") {
      if (r.flushed) r.flushed();
      return;
    }
    r.pieces += 1;
    const shown = clock(r.pieces / PIECES_PER_S);
    if (elapsed.textContent !== shown) elapsed.textContent = shown;
    showLevel(data.level);
    if (r.configured) stream(r, data);
    else if (r.early.length < EARLY_PIECES) r.early.push(data);
  }

  function stream(r, piece) {
    send(r, { type: "input_audio_buffer.append", audio: base64(piece.pcm) });
    r.turn += 1;
    if (!r.serverVad) turnByLevel(r, piece.level);
  }

  // Client-side turns: speech is a level well over the quiet heard so far (its floor
  // follows the quietest pieces down at once and creeps up slowly).
  function turnByLevel(r, level) {
    r.floor = Math.max(1e-4, level < r.floor ? level : r.floor * 1.02);
    if (level > Math.max(0.01, r.floor * 3.5)) {
      r.spoke = true;
      r.quiet = 0;
    } else {
      r.quiet += 1;
    }
    if (r.spoke && r.turn >= MIN_TURN_PIECES && (r.quiet >= QUIET_PIECES || r.turn >= MAX_TURN_PIECES)) {
      commit(r);
    } else if (!r.spoke && r.turn >= IDLE_PIECES) {
      send(r, { type: "input_audio_buffer.clear" }); // the session keeps the audio
      r.turn = 0;
    }
  }

  function commit(r) {
    send(r, { type: "input_audio_buffer.commit" });
    r.committing = true;
    r.turn = 0;
    r.spoke = false;
    r.quiet = 0;
  }

  function settle(r) {
    if (r.done && !r.committing && r.pending.size === 0) r.done();
  }

  function releaseAudio(r) {
    if (r.stream) r.stream.getTracks().forEach((t) => t.stop());
    if (r.context) r.context.close().catch(() => {});
    r.stream = null;
    r.context = null;
    meter.value = 0;
  }

  function waitFor(r, key, ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      r[key] = () => { clearTimeout(timer); resolve(); };
    });
  }

  function idle(message) {
    root.classList.remove("recording");
    startButton.disabled = false;
    stopButton.disabled = true;
    language.disabled = false;
    if (message) fail(message);
    say("");
    rec = null;
  }

  // --- Record and Stop -----------------------------------------------------------------------

  async function start() {
    if (rec) return;
    fail("");
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      fail(words.no_media);
      return;
    }
    if (typeof AudioWorkletNode === "undefined") {
      fail(words.no_worklet);
      return;
    }
    const r = (rec = {
      language: language.value, pieces: 0, turn: 0, floor: 0.003, spoke: false, quiet: 0,
      early: [], pending: new Set(), committing: false, configured: false,
      serverVad: false, recordId: null, stopping: false, opened: false,
    });
    startButton.disabled = true;
    language.disabled = true;
    say(words.asking);
    try {
      r.stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
      });
    } catch (e) {
      idle(micRefusal(e));
      return;
    }
    try {
      r.context = new AudioContext();
      await r.context.audioWorklet.addModule(root.dataset.worklet);
      let tail = r.context.createMediaStreamSource(r.stream);
      // Below 24 kHz's Nyquist before the worklet's interpolation (two 12 dB/octave poles).
      if (r.context.sampleRate > RATE) {
        for (let i = 0; i < 2; i++) {
          const lowpass = r.context.createBiquadFilter();
          lowpass.type = "lowpass";
          lowpass.frequency.value = RATE * 0.45;
          tail.connect(lowpass);
          tail = lowpass;
        }
      }
      r.node = new AudioWorkletNode(r.context, "pcm-24k", { numberOfOutputs: 1 });
      r.node.port.onmessage = (ev) => onPiece(r, ev.data);
      tail.connect(r.node);
      r.node.connect(r.context.destination); // silent: the node writes no output
      await r.context.resume();
    } catch (e) {
      releaseAudio(r);
      idle(words.no_worklet);
      return;
    }
    say(words.connecting);
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    r.socket = new WebSocket(`${scheme}//${location.host}${root.dataset.socket}`);
    r.socket.onopen = () => { r.opened = true; };
    r.socket.onmessage = (ev) => {
      let event;
      try { event = JSON.parse(ev.data); } catch (e) { return; }
      onEvent(r, event);
    };
    r.socket.onclose = () => {
      if (r.closed) r.closed();
      if (r.stopping) return;
      releaseAudio(r);
      idle(r.endedBy || (r.opened ? words.broken : words.refused_socket));
    };
    root.classList.add("recording");
    stopButton.disabled = false;
    stopButton.focus();
  }

  async function stop() {
    const r = rec;
    if (!r || r.stopping) return;
    r.stopping = true;
    stopButton.disabled = true;
    say(words.finishing);
    if (r.node) {
      const flushed = waitFor(r, "flushed", 1000);
      r.node.port.postMessage("flush"); // the last piece, shorter than 100 ms
      await flushed;
    }
    releaseAudio(r);
    if (r.socket.readyState === WebSocket.OPEN) {
      const early = r.early;
      r.early = [];
      for (const piece of early) {
        send(r, { type: "input_audio_buffer.append", audio: base64(piece.pcm) });
        r.turn += 1;
      }
      const finished = waitFor(r, "done", FINISH_WAIT_MS);
      if (r.turn || r.serverVad) commit(r);
      settle(r);
      await finished;
      const closed = waitFor(r, "closed", CLOSE_WAIT_MS);
      r.socket.close(1000, "stopped");
      await closed;
    }
    root.classList.remove("recording");
    say(words.leaving);
    location.href = r.recordId ? `/recordings/${encodeURIComponent(r.recordId)}` : "/";
  }

  startButton.addEventListener("click", start);
  stopButton.addEventListener("click", stop);
})();
