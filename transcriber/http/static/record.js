// The record page: the segment being played is highlighted and followed (and within
// it the word, once the word timings are loaded on the first play), a segment seeks the
// player, a segment's text is corrected in place, and a record still at work is kept
// current until it is transcribed or stopped.
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

  function seek(i) {
    const p = player();
    if (!p) return;
    p.currentTime = segments[i].start;
    highlight();
    const playing = p.play();
    if (playing) playing.catch(() => {});
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
    form.querySelector("label").textContent = `Corrected text of segment ${i + 1}`;
    area.value = li.querySelector(".text").textContent;
    form.querySelector(".restore").hidden = !li.classList.contains("corrected");
    const url = document.getElementById("segments").dataset.base + i;

    async function send(fields) {
      error.textContent = "";
      area.removeAttribute("aria-invalid");
      area.removeAttribute("aria-describedby");
      const r = await T.send("POST", url, () => new URLSearchParams(fields));
      if (r.status === 200) {
        li.querySelector(".text").textContent = r.body.text;
        segments[i].words = null;  // the owner's words have no timings
        li.querySelector(".machine span").textContent = r.body.machine_text;
        li.querySelector(".machine").hidden = !r.body.corrected;
        li.classList.toggle("corrected", r.body.corrected);
        closeForm(li, true);
        return;
      }
      error.textContent = r.body.error || `The correction was not saved (the server answered ${r.status}).`;
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
    }
  }

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

  document.addEventListener("DOMContentLoaded", () => {
    init();
    setTimeout(poll, 1500);
  });
})();
