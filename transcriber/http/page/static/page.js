// The owner's page: what every page shares (the anti-forgery token, signing in again
// in place when the session ends, requests of the page's own), and the recordings
// page: uploads with a progress bar each, and the list kept live.
"use strict";
(function () {
  const T = (window.transcriber = {});

  // The page's texts in its language, from the JSON block base.html writes
  // (transcriber/http/i18n.py's SCRIPT_WORDS): `T.t("refused", {why})`.
  let words = null;
  T.t = function (key, vars) {
    if (!words) {
      const el = document.getElementById("script-words");
      words = el ? JSON.parse(el.textContent) : {};
    }
    let s = words[key] || key;
    // A text with a count comes in each plural form of the language (i18n.SCRIPT_PLURALS).
    if (typeof s === "object") {
      const n = Number((vars || {}).n);
      const form = new Intl.PluralRules(document.documentElement.lang || "en").select(n);
      s = s[form] || s.other || s.many || Object.values(s)[0];
    }
    for (const [k, v] of Object.entries(vars || {})) s = s.split(`{${k}}`).join(String(v));
    return s;
  };

  T.csrf = function () {
    const m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.content : "";
  };

  function setCsrf(value) {
    const m = document.querySelector('meta[name="csrf-token"]');
    if (m) m.content = value;
    document.querySelectorAll('input[name="csrf"]').forEach((i) => { i.value = value; });
  }

  // One sign-in at a time: every request refused for an ended session waits for it,
  // and nothing on the page is touched meanwhile.
  let signingIn = null;
  T.signInAgain = function () {
    if (signingIn) return signingIn;
    const dialog = document.getElementById("signin-dialog");
    if (!dialog) { location.href = "/signin"; return new Promise(() => {}); }
    const form = document.getElementById("signin-again");
    const error = document.getElementById("signin-again-error");
    signingIn = new Promise((resolve) => {
      async function submit(ev) {
        ev.preventDefault();
        error.textContent = "";
        const body = new URLSearchParams({ token: form.token.value });
        let r;
        try {
          r = await fetch("/signin", { method: "POST", body, credentials: "same-origin",
                                       headers: { Accept: "application/json" } });
        } catch (e) { error.textContent = T.t("no_answer"); return; }
        const answer = await r.json().catch(() => ({}));
        if (!r.ok) { error.textContent = answer.error || T.t("signin_refused"); return; }
        setCsrf(answer.csrf);
        form.token.value = "";
        form.removeEventListener("submit", submit);
        dialog.close();
        signingIn = null;
        resolve();
      }
      form.addEventListener("submit", submit);
      dialog.showModal();
      form.token.focus();
    });
    return signingIn;
  };

  // A request of the page's script: XHR for upload progress. Resolves {status, body};
  // an ended session is signed in again and the request sent again.
  T.send = function (method, url, makeBody, onProgress) {
    return new Promise((resolve) => {
      const xhr = new XMLHttpRequest();
      xhr.open(method, url);
      xhr.setRequestHeader("X-CSRF-Token", T.csrf());
      xhr.setRequestHeader("Accept", "application/json");
      if (onProgress) xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
      xhr.onload = () => {
        if (xhr.status === 401) {
          T.signInAgain().then(() => T.send(method, url, makeBody, onProgress).then(resolve));
          return;
        }
        let body = {};
        try { body = JSON.parse(xhr.responseText); } catch (e) { body = {}; }
        resolve({ status: xhr.status, body });
      };
      xhr.onerror = () => resolve({ status: 0, body: {} });
      xhr.send(makeBody());
    });
  };

  // Fetches a fragment of this page to swap in; null when there is nothing to show.
  T.fragment = async function (url) {
    let r;
    try {
      r = await fetch(url, { credentials: "same-origin", headers: { "X-CSRF-Token": T.csrf() } });
    } catch (e) { return null; }
    if (r.status === 401) { await T.signInAgain(); return null; }
    return r.ok ? r.text() : null;
  };

  // Times in the reader's own time zone. The server writes each <time datetime> in UTC
  // (what a page shows without its script); here it is written again in this browser's
  // zone and the page's language, naming the zone, with the UTC text kept as its title.
  // Every swapped-in part is done again (T.swap).
  T.localTimes = function (root) {
    let format;
    try {
      format = new Intl.DateTimeFormat(document.documentElement.lang || undefined, {
        year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit",
        timeZoneName: "short",
      });
    } catch (e) { return; }
    root.querySelectorAll("time[datetime]").forEach((t) => {
      if (t.dataset.local) return;
      const at = new Date(t.getAttribute("datetime"));
      if (isNaN(at.getTime())) return;
      t.title = t.textContent;
      t.textContent = format.format(at);
      t.dataset.local = "1";
    });
  };
  document.addEventListener("DOMContentLoaded", () => T.localTimes(document));

  // Replaces `el` by `html`, keeping keyboard focus where it was when it can. Nothing
  // is touched when the server's answer did not change, so a screen reader hears only
  // real news.
  T.swap = function (el, html) {
    if (el.swappedFrom === html) return el;
    const active = document.activeElement;
    const key = active && el.contains(active) ? (active.id || active.getAttribute("href")) : null;
    const holder = document.createElement("div");
    holder.innerHTML = html;
    const fresh = holder.firstElementChild;
    fresh.swappedFrom = html;
    el.replaceWith(fresh);
    T.localTimes(fresh);
    if (key) {
      const again = document.getElementById(key) || fresh.querySelector(`[href="${CSS.escape(key)}"]`);
      if (again) again.focus();
    }
    return fresh;
  };

  // What was typed into a language field (`list="language-codes"`, _languages.html) as
  // a hint: a code of the list as it is, a language's name as its code, "detect" (or
  // nothing) as "", anything else null.
  T.languageCode = function (value) {
    const typed = value.trim().toLowerCase();
    if (!typed || typed === "auto" || typed === T.t("detect").toLowerCase()) return "";
    for (const o of document.querySelectorAll("#language-codes option")) {
      if (o.value === "auto") {
        if (typed === o.textContent.trim().toLowerCase()) return "";
      } else if (typed === o.value || typed === o.textContent.trim().toLowerCase()) {
        return o.value;
      }
    }
    return null;
  };

  function sizeWords(n) {
    if (n < 1024) return T.t("bytes", { n });
    const units = ["kilobyte", "megabyte", "gigabyte", "terabyte"];
    let i = -1;
    do { n /= 1024; i++; } while (n >= 1024 && i < units.length - 1);
    // The browser's own words for the units, in the page's language.
    return new Intl.NumberFormat(document.documentElement.lang,
      { style: "unit", unit: units[i], maximumFractionDigits: 1, minimumFractionDigits: 1 }).format(n);
  }

  // --- the recordings page ---------------------------------------------------------
  function recordingsPage() {
    const form = document.getElementById("upload-form");
    if (!form) return;
    const input = document.getElementById("files");
    const drop = document.getElementById("drop");
    const queue = document.getElementById("queue");
    const start = document.getElementById("upload-start");
    const maxBytes = Number(form.dataset.maxBytes);
    const items = [];
    let lastUpload = 0;

    function add(files) {
      for (const file of files) {
        const li = document.createElement("li");
        const n = items.length;
        // Each file its own title, language and speakers; empty ones take the batch's
        // (the fields above), which the placeholders show.
        li.innerHTML = `<span class="name"></span><button type="button" class="remove"></button>
          <div class="row per-file">
          <div class="field"><label for="title-${n}"></label><input id="title-${n}" class="title" maxlength="500"></div>
          <div class="field"><label for="language-${n}"></label><input id="language-${n}" class="language" maxlength="40" list="language-codes" autocomplete="off"></div>
          <div class="field"><label for="speakers-${n}"></label><input id="speakers-${n}" class="speakers" maxlength="5" autocomplete="off"></div>
          </div>
          <progress max="1" value="0" aria-label=""></progress><p class="msg" role="status"></p>`;
        li.querySelector(".name").textContent = `${file.name} (${sizeWords(file.size)})`;
        li.querySelector(".remove").textContent = T.t("remove");
        li.querySelector(`label[for="title-${n}"]`).textContent = T.t("title_for", { name: file.name });
        li.querySelector(`label[for="language-${n}"]`).textContent = T.t("language_for", { name: file.name });
        li.querySelector(`label[for="speakers-${n}"]`).textContent = T.t("speakers_for", { name: file.name });
        li.querySelector("progress").setAttribute("aria-label", T.t("upload_of", { name: file.name }));
        const item = { file, li, state: "ready" };
        li.querySelector(".remove").addEventListener("click", () => {
          item.state = "removed"; li.remove(); refresh();
        });
        if (file.size === 0) refuse(item, T.t("empty_file"));
        else if (file.size > maxBytes) refuse(item, T.t("too_large", { limit: sizeWords(maxBytes) }));
        items.push(item);
        queue.appendChild(li);
      }
      batchShown();
      refresh();
    }

    // What an empty per-file field takes: the batch's value, shown as its placeholder.
    function batchShown() {
      const language = form.language.value.trim();
      const speakers = form.speakers.value.trim();
      queue.querySelectorAll("input.language").forEach((i) => {
        i.placeholder = language || T.t("detect");
      });
      queue.querySelectorAll("input.speakers").forEach((i) => {
        i.placeholder = speakers || T.t("service_default");
      });
    }
    form.language.addEventListener("input", batchShown);
    form.speakers.addEventListener("input", batchShown);

    function refuse(item, why) {
      item.state = "refused";
      const msg = item.li.querySelector(".msg");
      msg.className = "msg refused";
      msg.textContent = T.t("refused", { why });
      item.li.querySelector("progress").hidden = true;
      // A refused file can be taken off the list; its fields do nothing more.
      item.li.querySelector(".remove").hidden = false;
      settle(item);
    }

    // A file sent or refused: its fields no longer change anything, so they say so.
    function settle(item) {
      item.li.querySelectorAll(".per-file input").forEach((i) => { i.disabled = true; });
    }

    function refresh() {
      start.disabled = !items.some((i) => i.state === "ready");
    }

    input.addEventListener("change", () => { add(input.files); input.value = ""; });
    ["dragenter", "dragover"].forEach((t) => drop.addEventListener(t, (e) => {
      e.preventDefault(); drop.classList.add("over");
    }));
    ["dragleave", "drop"].forEach((t) => drop.addEventListener(t, () => drop.classList.remove("over")));
    drop.addEventListener("drop", (e) => { e.preventDefault(); add(e.dataTransfer.files); });

    // A language field's value as a hint: a code of the recognizer's list, or a name of
    // one (in the page's language) as its code; "" to detect it; null for anything else,
    // refused before a byte is sent, in the page's words (the server refuses it too).
    function checkLanguage(input, error) {
      const code = T.languageCode(input.value);
      const unknown = code === null;
      if (error) {
        error.textContent = unknown ? T.t("refused", { why: T.t("unknown_language", { code: input.value.trim() }) }) : "";
        error.hidden = !unknown;
        error.classList.toggle("refused", unknown);
      }
      input.setAttribute("aria-invalid", unknown ? "true" : "false");
      return code;
    }

    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const language = checkLanguage(form.language, document.getElementById("language-error"));
      // The files stay ready: once the code is right, Upload sends them.
      if (language === null) { form.language.focus(); return; }
      const ready = items.filter((i) => i.state === "ready");
      for (const item of ready) {
        // What an earlier press said of this file no longer holds: checked again now.
        const said = item.li.querySelector(".msg");
        said.textContent = "";
        said.className = "msg";
        const own = item.li.querySelector("input.language");
        item.language = own.value.trim() ? checkLanguage(own, item.li.querySelector(".msg")) : language;
        if (item.language === null) { own.focus(); return; }
        // Speakers as the service takes them (off, auto, 2, 2-4), said in the page's words.
        const speakers = item.li.querySelector("input.speakers");
        const who = speakers.value.trim() || form.speakers.value.trim();
        const bad = who !== "" && !/^(off|auto|[0-9]{1,2}(-[0-9]{1,2})?)$/i.test(who);
        speakers.setAttribute("aria-invalid", bad ? "true" : "false");
        if (bad) {
          const msg = item.li.querySelector(".msg");
          msg.className = "msg refused";
          msg.hidden = false;
          msg.textContent = T.t("refused", { why: T.t("bad_speakers", { value: who }) });
          (speakers.value.trim() ? speakers : form.speakers).focus();
          return;
        }
      }
      start.disabled = true;
      for (const item of ready) {
        item.state = "sending";
        item.li.querySelector(".remove").hidden = true;
        settle(item);
        const bar = item.li.querySelector("progress");
        const msg = item.li.querySelector(".msg");
        msg.className = "msg";
        msg.hidden = false;
        msg.textContent = T.t("uploading");
        const r = await T.send("POST", "/upload", () => {
          const body = new FormData();
          const title = item.li.querySelector(".title").value.trim();
          if (title) body.append("title", title);
          if (item.language) body.append("language", item.language);
          const speakers = item.li.querySelector("input.speakers").value.trim() || form.speakers.value.trim();
          if (speakers) body.append("speakers", speakers);
          const vocabulary = form.vocabulary.value.trim();
          if (vocabulary) body.append("vocabulary", vocabulary);
          // The owner's own text: the transcript is to be it, timed (task align).
          const text = form.elements["align-text"].value;
          if (text.trim()) { body.append("task", "align"); body.append("text", text); }
          body.append("file", item.file, item.file.name);
          return body;
        }, (f) => { bar.value = f; });
        if (r.status === 201 || r.status === 200) {
          item.state = "done";
          bar.value = 1;
          // 200: the same file with the same fields was uploaded before: that record.
          msg.textContent = T.t(r.status === 201 ? "accepted" : "uploaded_before") + " ";
          const a = document.createElement("a");
          a.href = r.body.page;
          a.textContent = T.t("open_page");
          msg.appendChild(a);
          lastUpload = Date.now();
          poll();
        } else if (r.status === 0) {
          refuse(item, T.t("cut_off"));
        } else {
          // The API's bounds in the page's words; anything else as the server says it.
          const known = { 413: T.t("refused_413", { limit: sizeWords(maxBytes) }),
                          429: T.t("refused_429"), 507: T.t("refused_507") };
          refuse(item, known[r.status] || r.body.error || T.t("server_answered", { status: r.status }));
        }
      }
      refresh();
    });

    // The list keeps itself current: often while something moves, seldom otherwise.
    let timer = null;
    async function poll() {
      clearTimeout(timer);
      const list = document.getElementById("list");
      if (document.visibilityState === "visible" && list) {
        const q = new URLSearchParams(location.search);
        q.set("fragment", "rows");
        const html = await T.fragment("/?" + q.toString());
        // The rows the owner selected stay selected across the refresh.
        const picked = new Set(Array.from(document.querySelectorAll('#list input[name="id"]:checked'), (i) => i.value));
        if (html) T.swap(document.getElementById("list"), html.trim());
        document.querySelectorAll('#list input[name="id"]').forEach((i) => { if (picked.has(i.value)) i.checked = true; });
        selection();
      }
      const now = document.getElementById("list");
      const busy = (now && now.dataset.live === "1") || Date.now() - lastUpload < 30000;
      timer = setTimeout(poll, busy ? 1500 : 10000);
    }
    document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") poll(); });
    timer = setTimeout(poll, 1500);
  }

  // The list's selection: "Delete selected" works only with something selected (until
  // then it is disabled and says so), and "Select all" picks every row shown.
  function selection() {
    const all = document.getElementById("select-all");
    const button = document.getElementById("delete-selected-button");
    if (!all || !button) return;
    const boxes = Array.from(document.querySelectorAll('#list input[name="id"]'));
    const picked = boxes.filter((b) => b.checked).length;
    button.disabled = picked === 0;
    document.getElementById("delete-selected-help").hidden = picked > 0;
    all.checked = boxes.length > 0 && picked === boxes.length;
    all.indeterminate = picked > 0 && picked < boxes.length;
    all.disabled = boxes.length === 0;
  }
  document.addEventListener("change", (ev) => {
    const el = ev.target;
    if (el.id === "select-all") {
      document.querySelectorAll('#list input[name="id"]').forEach((b) => { b.checked = el.checked; });
    }
    if (el.id === "select-all" || (el.name === "id" && el.closest("#list"))) selection();
  });
  document.addEventListener("DOMContentLoaded", selection);

  // Forms that delete ask first (`data-confirm`); a form with nothing selected sends nothing.
  document.addEventListener("submit", (ev) => {
    const form = ev.target;
    if (!form.dataset || !form.dataset.confirm) return;
    const picked = form.id === "delete-selected" ? document.querySelectorAll(`input[form="${form.id}"]:checked`).length : 1;
    if (!picked || !window.confirm(form.dataset.confirm)) ev.preventDefault();
  });

  document.addEventListener("DOMContentLoaded", recordingsPage);
})();
