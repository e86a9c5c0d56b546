// The operator's screen: the glance refreshes itself every few seconds (no reload, no
// framework): the server renders the fragment, this puts it in place. A session that
// ended (401) sends the browser to sign in.
"use strict";
// The stopped list's "Resume the checked" needs something checked (until then it is
// disabled and says so); a resume the screen warns about asks first (`data-confirm`).
(function () {
  function checked() {
    const button = document.getElementById("resume-checked");
    if (!button) return;
    const n = document.querySelectorAll('#stopped input[name="id"]:checked').length;
    button.disabled = n === 0;
    document.getElementById("resume-checked-help").hidden = n > 0;
  }
  document.addEventListener("change", checked);
  document.addEventListener("DOMContentLoaded", checked);
  document.addEventListener("submit", (ev) => {
    const form = ev.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) ev.preventDefault();
  });
})();
(function () {
  const live = document.getElementById("ops-live");
  if (!live) return;
  const every = 1000 * Number(live.dataset.liveEvery || 5);
  async function refresh() {
    try {
      const r = await fetch("/ops?fragment=live", { credentials: "same-origin" });
      if (r.status === 401) { window.location.assign("/ops/signin?next=/ops"); return; }
      if (r.ok) live.innerHTML = await r.text();
    } catch (e) { /* the server is away for a moment: try again next time */ }
    setTimeout(refresh, every);
  }
  setTimeout(refresh, every);
})();
