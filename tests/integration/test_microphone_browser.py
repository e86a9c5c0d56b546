"""The page's microphone in a real headless Chromium (Debian's, with its fake
microphone playing a WAV over and over: `chromium(microphone=...)`) against the owner's
page's real `transcriber serve` (tests/integration/conftest.py's `page_served`: the
pipeline runs in it, and the live socket decodes with the bundled model).

The fake microphone says two known English sentences (espeak-ng, resampled by sox to
48 kHz), each followed by a pause longer than the page's end of a turn. The page's
AudioWorklet resamples to 24 kHz, its level meter ends the turns (the service takes no
`server_vad` yet; once it does, the page uses it), and the captions must bring the
known words; after Stop the kept record must be transcribed by the pipeline with them.

Screenshots (English and Russian, light, dark and a 390 px phone) go to the service's
output folder, printed at the start; they are never committed."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from axe_selenium_python import Axe
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from tests.helpers.browser import (
    RECOGNITION_WAIT_S,
    PageService,
    browser_session,
    css,
    screenshots,
    wait,
)

SENTENCES = (
    "Good morning everyone. Today we talk about the garden and the weather.",
    "Please close the window, it is cold outside.",
)
KNOWN = {"garden", "weather", "window", "outside"}
"""Words of `SENTENCES` the bundled base model gets right from espeak-ng's voice."""
CAPTION_WAIT_S = 120.0
"""The first sentence (about 5 s) plus its pause, then its live decoding on a busy CPU."""


def spoken_wav(folder: Path) -> Path:
    """`SENTENCES` spoken by espeak-ng, each padded by sox with a pause of 1.2-1.5 s
    (longer than the page's 0.7 s end of a turn), as a 16-bit mono WAV at 48 kHz."""
    parts = []
    for i, sentence in enumerate(SENTENCES):
        raw, part = folder / f"said-{i}.wav", folder / f"said-{i}-48k.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", raw, sentence], check=True)
        subprocess.run(
            ["sox", raw, "-r", "48000", "-b", "16", "-c", "1", part, "pad", "0.3", "1.4"],
            check=True,
        )
        parts.append(part)
    out = folder / "microphone.wav"
    subprocess.run(["sox", *parts, out], check=True)
    return out


def words_of(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def api(served: PageService, path: str) -> Any:
    r = httpx.get(
        served.url + path, headers={"authorization": f"Bearer {served.token}"}, timeout=30
    )
    assert r.status_code == 200, r.text
    return r.json()


def record_ids(served: PageService) -> set[str]:
    return {card["id"] for card in api(served, "/v1/recordings?limit=100")["items"]}


def serious(d: WebDriver) -> list[str]:
    """axe's serious and critical violations on the page as it is (rule: targets)."""
    axe = Axe(d)
    axe.inject()
    found = axe.run()["violations"]
    return [
        f"{v['id']}: {[n['target'] for n in v['nodes'][:3]]}"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


@pytest.fixture(scope="module")
def out(page_served: PageService) -> Path:
    folder = page_served.out / "microphone"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser(page_served: PageService, out: Path) -> Iterator[WebDriver]:
    """Chromium with the fake microphone, signed in to the page as the service's owner."""
    with browser_session(out / "chromium-profile", microphone=spoken_wav(out)) as d:
        sign_in(d, page_served)
        yield d


def captions(d: WebDriver) -> str:
    return str(d.execute_script("return document.getElementById('captions').innerText"))


def caption_lines(d: WebDriver) -> list[str]:
    """The captions whose turn has completed."""
    return [
        p.text
        for p in d.find_elements(By.CSS_SELECTOR, "#captions p[data-item]")
        if p.get_attribute("class") == ""
    ]


def sign_in(d: WebDriver, served: PageService) -> None:
    d.get(served.url + "/signin")
    css(d, "#token").send_keys(served.token)
    css(d, "#signin-submit").click()
    wait(d, lambda d: d.find_elements(By.ID, "upload-form"))


@pytest.mark.scenario(
    "page", "A refused microphone is said in words and Record can be pressed again"
)
def test_a_refused_microphone_is_said(page_served: PageService, out: Path) -> None:
    """A Chromium that asks before it gives the microphone, told to refuse this site."""
    with browser_session(
        out / "refusing-profile", microphone=spoken_wav(out), microphone_allowed=False
    ) as d:
        sign_in(d, page_served)
        d.execute_cdp_cmd(
            "Browser.setPermission",
            {
                "origin": page_served.url,
                "permission": {"name": "microphone"},
                "setting": "denied",
            },
        )
        d.get(page_served.url + "/microphone")
        css(d, "#record-start").click()
        wait(d, lambda d: "microphone was refused" in css(d, "#record-error").text)
        assert css(d, "#record-start").is_enabled()
        assert not css(d, "#record-stop").is_enabled()
        assert css(d, "#elapsed").text == "0:00"
        assert css(d, "#record-status").text == ""
        assert "recording" not in (css(d, "#microphone").get_attribute("class") or "")
        d.get(page_served.url + "/lang/ru?next=/microphone")
        css(d, "#record-start").click()
        wait(d, lambda d: "Доступ к микрофону запрещён" in css(d, "#record-error").text)
        assert serious(d) == []
        screenshots(d, out, "refused-ru")


WATCH_TURNS = """
// When each turn's caption line appears (its commit) and completes (its class cleared).
window.turnTimes = [];
const seen = new Map();
new MutationObserver(() => {
  for (const p of document.querySelectorAll("#captions p[data-item]")) {
    if (!seen.has(p.dataset.item)) {
      seen.set(p.dataset.item, {committed: performance.now()});
      window.turnTimes.push(seen.get(p.dataset.item));
    }
    const t = seen.get(p.dataset.item);
    if (p.className === "" && !t.done) t.done = performance.now();
  }
}).observe(document.getElementById("captions"),
           {childList: true, subtree: true, attributes: true, characterData: true});
"""


RESAMPLED = """
const [worklet, rate, done] = arguments;
const seconds = 2, hz = 440;
const context = new OfflineAudioContext(1, rate * seconds, rate);
context.audioWorklet.addModule(worklet).then(async () => {
  const node = new AudioWorkletNode(context, "pcm-24k");
  const pieces = [];
  node.port.onmessage = (ev) => { if (ev.data.pcm) pieces.push(new Int16Array(ev.data.pcm)); };
  const tone = context.createOscillator();
  tone.frequency.value = hz;
  tone.connect(node);
  node.connect(context.destination);
  tone.start();
  await context.startRendering();
  await new Promise((r) => setTimeout(r, 300));  // the port's last messages
  const pcm = Int16Array.from(pieces.flatMap((p) => Array.from(p)));
  let crossings = 0;
  for (let i = 1; i < pcm.length; i++) if (pcm[i - 1] < 0 && pcm[i] >= 0) crossings++;
  done({samples: pcm.length, sizes: pieces.map((p) => p.length), crossings,
        peak: Math.max(...pcm.map(Math.abs))});
}).catch((e) => done({error: String(e)}));
"""


@pytest.mark.parametrize("rate", [48000, 44100])
def test_the_worklet_makes_24khz_pcm_in_100ms_pieces(
    page_served: PageService, browser: WebDriver, rate: int
) -> None:
    """The page's AudioWorklet, fed 2 s of a 440 Hz sine at the browser's rate: 24 kHz
    out, in 2400-sample pieces, the tone's pitch kept (a wrong ratio would move it)."""
    d = browser
    d.get(page_served.url + "/microphone")
    worklet = css(d, "#microphone").get_attribute("data-worklet")
    got = d.execute_async_script(RESAMPLED, worklet, rate)
    assert "error" not in got, got
    assert abs(got["samples"] - 2 * 24000) <= 2400, got["samples"]
    assert set(got["sizes"][:-1]) == {2400}, got["sizes"]
    assert abs(got["crossings"] - 2 * 440) <= 2, got["crossings"]  # 440 Hz at 24 kHz
    assert got["peak"] > 0.9 * 0x7FFF, got["peak"]


@pytest.mark.scenario(
    "live", "The page's microphone captions what is said and the kept record is transcribed"
)
def test_record_captions_and_the_kept_record(
    page_served: PageService, browser: WebDriver, out: Path
) -> None:
    d = browser
    served = page_served
    before = record_ids(served)
    d.get(served.url + "/")
    screenshots(d, out, "list-en")
    css(d, "#record-link").click()
    wait(d, lambda d: d.current_url.endswith("/microphone"))
    assert serious(d) == [], "the recorder, idle"
    Select(css(d, "#live-language")).select_by_value("en")
    d.execute_script(WATCH_TURNS)
    css(d, "#record-start").click()
    # Keyboard: the focus is on Stop once recording.
    wait(d, lambda d: d.switch_to.active_element.get_attribute("id") == "record-stop")
    wait(d, lambda d: float(css(d, "#level").get_attribute("value")) > 0.3, message="level")
    wait(d, lambda d: css(d, "#elapsed").text not in ("0:00", "0:01"), message="elapsed")
    started = time.monotonic()
    try:
        wait(d, lambda d: words_of(captions(d)) >= KNOWN, timeout=CAPTION_WAIT_S)
    except TimeoutException:
        pytest.fail(f"the known words are not in the captions: {captions(d)!r}")
    served.figures["microphone_known_words_s"] = round(time.monotonic() - started, 1)
    turns = d.execute_script("return window.turnTimes")
    served.figures["microphone_commit_to_caption_s"] = [
        round((t["done"] - t["committed"]) / 1000, 2) for t in turns if "done" in t
    ]
    lines = caption_lines(d)
    # The page's own turns: one sentence each (the pauses end them), not one long turn.
    assert any(
        {"garden", "weather"} <= words_of(t) and "window" not in words_of(t) for t in lines
    ), lines
    assert "Recording" in css(d, "#record-status").text
    assert serious(d) == [], "the recorder, with captions"
    screenshots(d, out, "recording-en")

    minutes, seconds = css(d, "#elapsed").text.split(":")
    shown_s = int(minutes) * 60 + int(seconds)
    css(d, "#record-stop").click()
    wait(d, lambda d: not d.current_url.endswith("/microphone"), timeout=60, message="Stop")
    assert re.search(r"/(recordings/[0-9a-f-]+)?$", d.current_url), d.current_url

    deadline = time.monotonic() + 30
    while not (new := record_ids(served) - before):
        assert time.monotonic() < deadline, "the session was not kept"
        time.sleep(0.2)
    [rid] = new
    if "/recordings/" in d.current_url:
        assert d.current_url.endswith(f"/recordings/{rid}")
    deadline = time.monotonic() + RECOGNITION_WAIT_S
    while not (card := api(served, f"/v1/recordings/{rid}"))["done"]:
        assert card["stopped"] is None, card
        assert time.monotonic() < deadline, card
        time.sleep(0.5)
    # The page's clock counts the 100 ms pieces it made: the record holds as much audio
    # (a worklet that made 48 kHz and called it 24 kHz would double it).
    assert shown_s - 1 <= card["duration_s"] <= shown_s + 2.5, (shown_s, card)
    r = httpx.get(
        f"{served.url}/v1/recordings/{rid}/text",
        headers={"authorization": f"Bearer {served.token}"},
    )
    assert {"garden", "weather"} <= words_of(r.text), r.text
    served.figures["microphone_record"] = {"duration_s": card["duration_s"], "text": r.text}


FAKE_SERVER_VAD = """
// A fake of the live socket as it will be with the server's voice detection and a
// record from the session's start: it takes server_vad, names a record in
// session.created, and answers a commit; the test speaks its other events.
window.sent = [];
class FakeSocket {
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    window.fakeSocket = this;
    setTimeout(() => {
      this.readyState = 1;
      if (this.onopen) this.onopen();
      this.emit({type: "session.created",
                 session: {id: "sess_1", record_id: RECORD, type: "transcription"}});
    }, 10);
  }
  emit(event) { if (this.onmessage) this.onmessage({data: JSON.stringify(event)}); }
  send(text) {
    const event = JSON.parse(text);
    window.sent.push(event.type === "input_audio_buffer.append" ? "append" : event);
    if (event.type === "session.update") {
      this.emit({type: "session.updated", session: event.session});
    }
    if (event.type === "input_audio_buffer.commit") {
      this.emit({type: "input_audio_buffer.committed", item_id: "item_2"});
      setTimeout(() => this.emit({type: "conversation.item.input_audio_transcription.completed",
                                  item_id: "item_2", transcript: "And the last words."}), 200);
    }
  }
  close() { this.readyState = 3; setTimeout(() => this.onclose && this.onclose({code: 1000}), 0); }
}
FakeSocket.CONNECTING = 0; FakeSocket.OPEN = 1; FakeSocket.CLOSED = 3;
window.WebSocket = FakeSocket;
"""


def test_with_the_servers_voice_detection_the_page_commits_only_at_stop(
    page_served: PageService, browser: WebDriver
) -> None:
    """Against a fake socket that takes `server_vad` (the service's own voice detection,
    not here yet) and names the session's record: the page lets the server end the
    turns — no commit of its own through pauses that would end its own turns — shows
    a delta before its turn is committed, commits once at Stop, and opens the record."""
    d = browser
    record = "0b5e1d8c-0000-4000-8000-000000000042"
    d.get(page_served.url + "/microphone")
    d.execute_script(FAKE_SERVER_VAD.replace("RECORD", json.dumps(record)))
    css(d, "#record-start").click()
    wait(d, lambda d: d.execute_script("return window.sent.length") > 1)
    [update] = [e for e in d.execute_script("return window.sent") if e != "append"]
    assert update["session"]["audio"]["input"]["turn_detection"] == {"type": "server_vad"}
    # The fake microphone's first sentence and its pause (1.4 s, twice the page's own
    # end of a turn) go by: 8 s of appends, and no commit.
    wait(d, lambda d: d.execute_script("return window.sent.length") > 80, timeout=30)
    sent = [e for e in d.execute_script("return window.sent") if e != "append"]
    assert [e["type"] for e in sent] == ["session.update"], sent
    assert "as you speak" in css(d, "#record-status").text
    d.execute_script(
        "const s = window.fakeSocket;"
        "s.emit({type: 'input_audio_buffer.speech_started', item_id: 'item_1'});"
        "s.emit({type: 'conversation.item.input_audio_transcription.delta',"
        "        item_id: 'item_1', delta: 'Good morning'});"
    )
    wait(d, lambda d: "Good morning" in captions(d))
    d.execute_script(
        "const s = window.fakeSocket;"
        "s.emit({type: 'input_audio_buffer.committed', item_id: 'item_1'});"
        "s.emit({type: 'conversation.item.input_audio_transcription.completed',"
        "        item_id: 'item_1', transcript: 'Good morning, everyone.'});"
    )
    wait(d, lambda d: caption_lines(d) == ["Good morning, everyone."])
    sent = [e for e in d.execute_script("return window.sent") if e != "append"]
    assert [e["type"] for e in sent] == ["session.update"], sent
    css(d, "#record-stop").click()
    wait(d, lambda d: d.current_url.endswith(f"/recordings/{record}"), message="the record")
    # (The fake's record is no record of the service: its page says so; what matters
    # is where Stop went, after the last turn's caption.)


def test_the_recorder_in_russian_on_a_phone(
    page_served: PageService, browser: WebDriver, out: Path
) -> None:
    """Screenshots and axe of the recorder in Russian while it records, desktop and
    phone (the Record flow itself is proved above)."""
    d = browser
    d.get(page_served.url + "/lang/ru?next=/microphone")
    assert css(d, "h1").text == "Запись с микрофона"
    screenshots(d, out, "idle-ru")
    Select(css(d, "#live-language")).select_by_value("en")
    css(d, "#record-start").click()
    wait(d, lambda d: caption_lines(d), timeout=CAPTION_WAIT_S, message="a caption")
    assert "Идёт запись" in css(d, "#record-status").text
    found = serious(d)
    d.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True},
    )
    found += serious(d)
    width = d.execute_script("return document.documentElement.scrollWidth")
    d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    screenshots(d, out, "recording-ru")
    css(d, "#record-stop").click()
    wait(d, lambda d: not d.current_url.endswith("/microphone"), timeout=60, message="Stop")
    d.get(page_served.url + "/lang/en?next=/")
    assert found == []
    assert width <= 390, "the phone's page scrolls sideways"
