// The operator's screen: the glance refreshes itself every few seconds (no reload, no
// framework): the server renders the fragment, this puts it in place. A session that
// ended (401) sends the browser to sign in.
"use strict";
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
