// The record page: the segment being played is highlighted and followed (and within
// it the word, once the word timings are loaded on the first play), a segment seeks the
// player, a segment's text is corrected in place, and a record still at work is kept
// current until it is transcribed or stopped. The editor's tools: playback speed, a
// waveform overview to see and click where to go, find and replace across the
// transcript (saved as the owner's corrections, one step of undo), and keyboard
// shortcuts (listed on the page, _shortcuts.html).
"use strict";
(function () {
  const T = window.transcriber;
  let segments = [];
  let current = -1;
  let currentWord = null;
  let wordsLoaded = false;

  // The recognizer's word timings, from the transcript's JSON: a segment the owner has
  // not corrected gets a span per word. Loaded on the first play only, so the page
  // itself stays light however long the recording.
  async function loadWords() {
    const link = document.getElementById("download-json");
    if (wordsLoaded || !link) return;
    wordsLoaded = true;
    let data;
    try {
      const r = await fetch(link.getAttribute("href"), { credentials: "same-origin" });
      if (!r.ok) return;
      data = await r.json();
    } catch (e) { return; }
    (data.segments || []).forEach((s, i) => {
      const seg = segments[i];
      if (!seg || s.corrected || !s.words || !s.words.length) return;
      const p = seg.el.querySelector(".text");
      if (s.words.map((w) => w.word).join("").trim() !== p.textContent.trim()) return;
      p.textContent = "";
      seg.words = s.words.map((w, k) => {
        const span = document.createElement("span");
        span.className = "word";
        span.textContent = k === 0 ? w.word.trimStart() : w.word;
        p.appendChild(span);
        return { start: w.start, el: span };
      });
    });
    highlight();
  }

  function highlightWord(seg, t) {
    let found = null;
    if (seg && seg.words) {
      for (const w of seg.words) { if (w.start <= t + 0.01) found = w.el; else break; }
    }
    if (found === currentWord) return;
    if (currentWord) currentWord.classList.remove("current");
    currentWord = found;
    if (found) found.classList.add("current");
  }

  function player() { return document.getElementById("player"); }

  function at(t) {
    // The last segment starting at or before t (segments are in time order).
    let lo = 0, hi = segments.length - 1, found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (segments[mid].start <= t + 0.01) { found = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return found;
  }

  function highlight() {
    const p = player();
    if (!p) return;
    const i = at(p.currentTime);
    highlightWord(segments[i], p.currentTime);
    if (i === current) return;
    if (current >= 0 && segments[current]) {
      segments[current].el.classList.remove("current");
      segments[current].el.removeAttribute("aria-current");
    }
    current = i;
    if (i < 0) return;
    const el = segments[i].el;
    el.classList.add("current");
    el.setAttribute("aria-current", "true");
    const follow = document.getElementById("follow");
    if (follow && follow.checked && !el.contains(document.activeElement)) {
      el.scrollIntoView({ block: "nearest" });
    }
  }

  function play(p) {
    const playing = p.play();
    if (playing) playing.catch(() => {});
  }

  function seek(i, keepPaused) {
    const p = player();
    if (!p) return;
    p.currentTime = segments[i].start;
    highlight();
    if (!keepPaused) play(p);
  }

  // A saved correction's answer shown in its segment.
  function showSaved(li, body) {
    const i = Number(li.dataset.index);
    li.querySelector(".text").textContent = body.text;
    segments[i].words = null;  // the owner's words have no timings
    li.querySelector(".machine span").textContent = body.machine_text;
    li.querySelector(".machine").hidden = !body.corrected;
    li.classList.toggle("corrected", body.corrected);
  }

  // A row is a stored segment, or the part of one that one speaker says (where the
  // speakers change inside it, the page splits it as the exports do): a part's text is
  // saved with its first word.
  function correctionUrl(li) {
    return document.getElementById("segments").dataset.base + li.dataset.segment;
  }

  function correctionFields(li, fields) {
    return new URLSearchParams(li.dataset.word === undefined ? fields : { ...fields, word: li.dataset.word });
  }

  function closeForm(li, focusBack) {
    const form = li.querySelector("form.correction");
    if (form) form.remove();
    if (focusBack) li.querySelector(".fix").focus();
  }

  function openForm(li) {
    if (li.querySelector("form.correction")) { li.querySelector("textarea").focus(); return; }
    const i = Number(li.dataset.index);
    const form = document.getElementById("correction-template").content.firstElementChild.cloneNode(true);
    const area = form.querySelector("textarea");
    const error = form.querySelector(".error");
    area.id = `fix-${i}`;
    error.id = `fix-error-${i}`;
    form.querySelector("label").htmlFor = area.id;
    form.querySelector("label").textContent = T.t("corrected_text_of", { n: i + 1 });
    area.value = li.querySelector(".text").textContent;
    form.querySelector(".restore").hidden = !li.classList.contains("corrected");
    const url = correctionUrl(li);

    async function send(fields) {
      error.textContent = "";
      area.removeAttribute("aria-invalid");
      area.removeAttribute("aria-describedby");
      const r = await T.send("POST", url, () => correctionFields(li, fields));
      if (r.status === 200) {
        showSaved(li, r.body);
        closeForm(li, true);
        return;
      }
      error.textContent = r.body.error || T.t("not_saved", { status: r.status });
      area.setAttribute("aria-invalid", "true");
      area.setAttribute("aria-describedby", error.id);
      area.focus();
    }

    form.addEventListener("submit", (e) => { e.preventDefault(); send({ text: area.value }); });
    form.querySelector(".restore").addEventListener("click", () => send({ restore: "1" }));
    form.querySelector(".cancel").addEventListener("click", () => closeForm(li, true));
    form.addEventListener("keydown", (e) => { if (e.key === "Escape") closeForm(li, true); });
    li.appendChild(form);
    area.focus();
  }

  // --- playback speed ----------------------------------------------------------------
  const RATES = [0.5, 0.75, 1, 1.25, 1.5, 1.75, 2];

  function setRate(rate) {
    const p = player();
    const select = document.getElementById("speed");
    if (!p || !select) return;
    rate = Math.min(2, Math.max(0.5, rate));
    p.playbackRate = rate;
    p.defaultPlaybackRate = rate;
    select.value = String(rate);
    try { localStorage.setItem("transcriber.speed", String(rate)); } catch (e) { /* private mode */ }
  }

  function setupSpeed() {
    const select = document.getElementById("speed");
    if (!select) return;
    let saved = 1;
    try { saved = Number(localStorage.getItem("transcriber.speed")) || 1; } catch (e) { saved = 1; }
    setRate(RATES.includes(saved) ? saved : 1);
    select.addEventListener("change", () => setRate(Number(select.value)));
  }

  function stepRate(direction) {
    const p = player();
    if (!p) return;
    const i = RATES.indexOf(p.playbackRate);
    const next = i < 0 ? 1 : RATES[Math.min(RATES.length - 1, Math.max(0, i + direction))];
    setRate(next);
  }

  // --- the waveform overview ---------------------------------------------------------
  // Its peaks come from the server (/recordings/<id>/peaks.json, computed once from the
  // normalized audio); drawn on a canvas, the part already played in the accent colour,
  // a click or the arrow keys move playback there.
  const peaksOf = {};
  let wave = null;

  function clockText(t) {
    const s = Math.max(0, Math.round(t));
    const m = Math.floor(s / 60);
    return `${m}:${String(s % 60).padStart(2, "0")}`;
  }

  function drawWave() {
    if (!wave || !wave.peaks) return;
    const { canvas, peaks } = wave;
    const p = player();
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(1, Math.floor(canvas.clientWidth * ratio));
    const height = Math.max(1, Math.floor(canvas.clientHeight * ratio));
    if (canvas.width !== width || canvas.height !== height) {
      canvas.width = width;
      canvas.height = height;
    }
    const ctx = canvas.getContext("2d");
    const style = getComputedStyle(canvas);
    const played = p && wave.duration ? (p.currentTime / wave.duration) * width : 0;
    const top = Math.max(1, ...peaks);
    ctx.clearRect(0, 0, width, height);
    for (let x = 0; x < width; x++) {
      const a = Math.floor((x / width) * peaks.length);
      const b = Math.max(a + 1, Math.floor(((x + 1) / width) * peaks.length));
      let v = 0;
      for (let k = a; k < b && k < peaks.length; k++) v = Math.max(v, peaks[k]);
      const h = Math.max(1, (v / top) * (height - 2));
      ctx.fillStyle = x < played ? style.getPropertyValue("--wave-played") || "#2a6" : style.color;
      ctx.fillRect(x, (height - h) / 2, 1, h);
    }
    if (p) {
      canvas.setAttribute("aria-valuenow", String(Math.round(p.currentTime)));
      canvas.setAttribute("aria-valuetext", clockText(p.currentTime));
    }
  }

  async function setupWaveform() {
    const canvas = document.getElementById("waveform");
    if (!canvas) { wave = null; return; }
    const url = canvas.dataset.peaks;
    wave = { canvas, peaks: null, duration: Number(canvas.dataset.duration) || 0 };
    canvas.addEventListener("click", (e) => {
      const p = player();
      if (!p || !wave.duration) return;
      const rect = canvas.getBoundingClientRect();
      p.currentTime = Math.min(wave.duration, Math.max(0, ((e.clientX - rect.left) / rect.width) * wave.duration));
      highlight();
      drawWave();
    });
    if (!peaksOf[url]) {
      try {
        const r = await fetch(url, { credentials: "same-origin" });
        if (!r.ok) return;
        peaksOf[url] = await r.json();
      } catch (e) { return; }
    }
    if (!wave || wave.canvas !== canvas) return;  // replaced meanwhile
    wave.peaks = peaksOf[url].peaks;
    wave.duration = peaksOf[url].duration_s || wave.duration;
    canvas.dataset.ready = "1";
    drawWave();
  }

  // --- find and replace --------------------------------------------------------------
  let undo = null;  // [{i, text}] of the last replacement, to put back

  function pattern(find, matchCase) {
    return new RegExp(find.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), matchCase ? "g" : "gi");
  }

  function setupFindReplace() {
    const form = document.getElementById("find-replace");
    if (!form) return;
    const find = document.getElementById("find");
    const replace = document.getElementById("replace");
    const matchCase = document.getElementById("find-case");
    const all = document.getElementById("replace-all");
    const undoButton = document.getElementById("replace-undo");
    const count = document.getElementById("find-count");
    undoButton.disabled = !undo;

    function matches() {
      const found = [];
      let total = 0;
      if (!find.value) return { found, total };
      const re = pattern(find.value, matchCase.checked);
      segments.forEach((seg, i) => {
        const n = (seg.el.querySelector(".text").textContent.match(re) || []).length;
        seg.el.classList.toggle("match", n > 0);
        if (n) { found.push(i); total += n; }
      });
      return { found, total };
    }

    function refresh() {
      const { total } = matches();
      if (!find.value) segments.forEach((seg) => seg.el.classList.remove("match"));
      count.textContent = find.value ? (total ? T.t("found", { n: total }) : T.t("nothing_found")) : "";
      all.disabled = !total;
    }

    // Saves each segment's new text through the corrections route, one at a time;
    // resolves to the segments saved and the first refusal, if any.
    async function saveAll(changes) {
      const saved = [];
      let why = null;
      for (const { i, text } of changes) {
        const li = segments[i].el;
        const r = await T.send("POST", correctionUrl(li), () => correctionFields(li, { text }));
        if (r.status === 200) { showSaved(li, r.body); saved.push(i); }
        else why = why || r.body.error || T.t("server_answered", { status: r.status });
      }
      return { saved, why };
    }

    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const { found, total } = matches();
      if (!total) return;
      const re = pattern(find.value, matchCase.checked);
      const by = replace.value;
      const before = found.map((i) => ({ i, text: segments[i].el.querySelector(".text").textContent }));
      const changes = before.map(({ i, text }) => ({ i, text: text.replace(re, () => by) }));
      all.disabled = true;
      count.textContent = T.t("replaced", { n: total });
      const { saved, why } = await saveAll(changes);
      undo = before.filter(({ i }) => saved.includes(i));
      undoButton.disabled = !undo.length;
      refresh();
      count.textContent = why
        ? T.t("some_not_saved", { n: changes.length - saved.length, why })
        : T.t("replaced_saved", { n: total });
    });

    undoButton.addEventListener("click", async () => {
      if (!undo || !undo.length) return;
      const back = undo;
      undo = null;
      undoButton.disabled = true;
      const { saved, why } = await saveAll(back);
      refresh();
      count.textContent = why
        ? T.t("some_not_saved", { n: back.length - saved.length, why })
        : T.t("undone", { n: saved.length });
    });

    for (const el of [find, matchCase]) el.addEventListener("input", refresh);
    refresh();
  }

  // --- keyboard shortcuts ------------------------------------------------------------
  // By key position (`code`), so they work in a Russian layout as well; while typing in
  // a field, with Alt. Arrows only outside fields (Alt+← is the browser's Back).
  function playingIndex() {
    const p = player();
    return p ? at(p.currentTime) : -1;
  }

  function onKey(e) {
    if (e.ctrlKey || e.metaKey || e.defaultPrevented) return;
    const p = player();
    if (!p) return;
    const target = e.target instanceof Element ? e.target : null;
    const typing = target && target.closest("input, textarea, select, [contenteditable]");
    if (typing && !e.altKey) return;
    const pressable = target && target.closest("button, a, summary, audio");
    const skip = (by) => {
      p.currentTime = Math.min(p.duration || Infinity, Math.max(0, p.currentTime + by));
      highlight();
      drawWave();
    };
    const toggle = () => { if (p.paused) play(p); else p.pause(); };
    const arrows = !typing && !e.altKey;
    switch (e.code) {
      case "KeyK": toggle(); break;
      case "Space": if (typing || pressable) return; toggle(); break;
      case "KeyJ": skip(-5); break;
      case "KeyL": skip(5); break;
      case "ArrowLeft": if (!arrows) return; skip(-5); break;
      case "ArrowRight": if (!arrows) return; skip(5); break;
      case "KeyP": {
        if (!segments.length) return;
        const i = playingIndex();
        // Back to the start of this segment when well into it, else the one before.
        const into = i >= 0 && p.currentTime - segments[i].start > 1;
        seek(Math.max(0, into ? i : i - 1), p.paused);
        break;
      }
      case "KeyN": {
        if (!segments.length) return;
        seek(Math.min(segments.length - 1, playingIndex() + 1), p.paused);
        break;
      }
      case "KeyE": {
        // The shared view has nothing to correct.
        if (!segments.length || !document.getElementById("correction-template")) return;
        openForm(segments[Math.max(0, playingIndex())].el);
        break;
      }
      case "Minus": stepRate(-1); break;
      case "Equal": stepRate(1); break;
      default: return;
    }
    e.preventDefault();
  }

  function init() {
    current = -1;
    currentWord = null;
    wordsLoaded = false;
    const list = document.getElementById("segments");
    segments = list ? Array.from(list.querySelectorAll(".segment")).map((el) => ({
      el, start: Number(el.dataset.start), end: Number(el.dataset.end) })) : [];
    if (list) {
      list.addEventListener("click", (e) => {
        const li = e.target.closest(".segment");
        if (!li || e.target.closest("form")) return;
        if (e.target.closest(".fix")) { openForm(li); return; }
        seek(Number(li.dataset.index));
      });
    }
    const p = player();
    if (p) {
      p.addEventListener("timeupdate", highlight);
      p.addEventListener("seeked", highlight);
      p.addEventListener("play", loadWords);
      p.addEventListener("timeupdate", drawWave);
      p.addEventListener("seeked", drawWave);
    }
    setupSpeed();
    setupWaveform();
    setupFindReplace();
    setupSpeakers();
  }

  // A segment's speaker is saved as soon as another is chosen (without a script, by
  // its Move button).
  function setupSpeakers() {
    for (const form of document.querySelectorAll("form.who")) {
      form.querySelector(".move").hidden = true;
      form.querySelector("select").addEventListener("change", () => form.requestSubmit());
    }
  }

  // --- edits in place ----------------------------------------------------------------
  // The page's forms that change the record (its fields, a speaker's name or a segment's,
  // a share link made or revoked) are sent by the script: the server answers as it does
  // without one (the record page again, with the change or with the reason it was
  // refused), and only the parts that form changes are put in place, so the page keeps
  // its scroll, its playback and the keyboard's place. Without the script they reload.
  const IN_PLACE = [
    ["#edit-form", ["record-title", "edit-details", "status"]],
    ["form.rename", ["speakers", "segments"]],
    ["form.who", ["speakers", "segments"]],
    ["#share-form", ["shares"]],
    ["#share-list form", ["shares"]],
  ];

  function said(text) {
    let region = document.getElementById("in-place-status");
    if (!region) {
      region = document.createElement("p");
      region.id = "in-place-status";
      region.className = "visually-hidden";
      region.setAttribute("role", "status");
      document.body.appendChild(region);
    }
    region.textContent = "";
    setTimeout(() => { region.textContent = text; }, 50);
  }

  async function sendInPlace(form, parts) {
    const focused = document.activeElement && document.activeElement.id;
    let r;
    try {
      r = await fetch(form.action, { method: "POST", body: new FormData(form),
                                     credentials: "same-origin", headers: { "X-CSRF-Token": T.csrf() } });
    } catch (e) { said(T.t("no_answer")); return; }
    if (r.status === 401) { await T.signInAgain(); sendInPlace(form, parts); return; }
    if (!r.ok && r.status !== 422) { location.reload(); return; }
    const fresh = new DOMParser().parseFromString(await r.text(), "text/html");
    for (const id of parts) {
      const now = document.getElementById(id);
      const next = fresh.getElementById(id);
      if (!now || !next) continue;
      // A folded section the owner had open stays open.
      if (now.tagName === "DETAILS" && now.open) next.setAttribute("open", "");
      now.replaceWith(document.importNode(next, true));
    }
    const segmentsChanged = parts.includes("segments");
    if (segmentsChanged) init();
    setupCopy();
    T.localTimes(document);
    const back = (focused && document.getElementById(focused))
      || document.querySelector(`#${parts[0]} summary, #${parts[0]} [id]`);
    if (back) back.focus();
    said(r.status === 422 ? T.t("not_changed") : T.t("saved"));
  }

  document.addEventListener("submit", (ev) => {
    if (ev.defaultPrevented) return;  // declined (page.js asks first where it must)
    const form = ev.target;
    const found = IN_PLACE.find(([selector]) => form.matches(selector));
    if (!found) return;
    ev.preventDefault();
    sendInPlace(form, found[1]);
  });

  // A record still at work: its state, player and transcript kept current.
  async function poll() {
    const status = document.getElementById("status");
    if (!status || status.dataset.final === "1") return;
    const p = player();
    const live = document.getElementById("live");
    if (document.visibilityState === "visible" && !(p && !p.paused)) {
      const html = await T.fragment(location.pathname + "?fragment=live");
      if (html) {
        const next = `<div id="live" data-id="${live.dataset.id}">${html}</div>`;
        T.swap(live, next);
        init();
      }
    }
    setTimeout(poll, 1500);
  }

  // A new share link, shown once: a button copies it (the clipboard where the browser
  // gives it, else the selected text), and says so.
  function setupCopy() {
    const button = document.getElementById("new-share-copy");
    const field = document.getElementById("new-share");
    if (!button || !field) return;
    button.hidden = false;
    button.addEventListener("click", async () => {
      let done = false;
      try {
        await navigator.clipboard.writeText(field.value);
        done = true;
      } catch (e) {
        field.select();
        done = document.execCommand && document.execCommand("copy");
      }
      document.getElementById("new-share-copied").textContent = done ? T.t("copied") : T.t("copy_by_hand");
    });
  }

  // What a form's answer brings into view (#shares, #speakers) is not left under the
  // sticky player: anchors stop below it, as tall as it is now.
  function belowPlayer() {
    const player = document.querySelector(".player");
    if (!player) return;
    document.documentElement.style.setProperty("--player-h", `${player.offsetHeight + 8}px`);
    const target = location.hash && document.getElementById(location.hash.slice(1));
    if (target) target.scrollIntoView();
  }

  document.addEventListener("DOMContentLoaded", () => {
    setupCopy();
    belowPlayer();
    document.addEventListener("keydown", onKey);
    window.addEventListener("resize", drawWave);
    init();
    setTimeout(poll, 1500);
  });
})();
