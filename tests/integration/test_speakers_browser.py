"""Who spoke, on the owner's page in a real headless Chromium against a real `transcriber
serve` (the session's owner's page service and browser, which test_page_browser.py
uses too: tests/integration/conftest.py) with real recognition and real
diarization: a two-voice conversation of espeak-ng voices, its speakers in two colours,
renamed and a segment moved on the page, and the downloaded VTT naming them."""

from __future__ import annotations

import re
import time

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from tests.helpers import browser as pb
from transcriber.bench.speakers import make_conversation


@pytest.mark.scenario("speakers", "The owner renames a speaker on the page and the download has it")
def test_rename_a_speaker_and_download_the_vtt(
    page_served: pb.PageService, page_browser: WebDriver
) -> None:
    served, browser = page_served, page_browser
    wav = served.out / "two-voices.wav"
    make_conversation(wav, speakers=2, turns=6, seed=7)
    auth = {"Authorization": f"Bearer {served.token}"}
    with wav.open("rb") as f:
        r = httpx.post(
            f"{served.url}/v1/recordings",
            headers=auth,
            files={"file": ("two-voices.wav", f, "audio/wav")},
            data={"speakers": "auto", "language": "en", "title": "Two voices"},
            timeout=60,
        )
    assert r.status_code == 201, r.text
    rid = r.json()["id"]
    deadline = time.monotonic() + pb.RECOGNITION_WAIT_S
    while not (card := httpx.get(f"{served.url}/v1/recordings/{rid}", headers=auth).json())["done"]:
        assert card["stopped"] is None and time.monotonic() < deadline, card
        time.sleep(0.5)
    assert card["speakers"] == {"asked": "auto", "found": 2}

    d = browser
    d.get(served.url + "/signin")
    pb.css(d, "#token").send_keys(served.token)
    pb.css(d, "#signin-submit").click()
    pb.wait(d, lambda d: d.find_elements(By.ID, "upload-form"))
    d.get(f"{served.url}/recordings/{rid}")
    speakers = pb.wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#speakers li.spk"))
    assert [s.find_element(By.TAG_NAME, "label").text for s in speakers] == [
        "Speaker 1",
        "Speaker 2",
    ]
    colours = {s.value_of_css_property("border-left-color") for s in speakers}
    assert len(colours) == 2, colours
    shown = [
        Select(e).first_selected_option.text
        for e in d.find_elements(By.CSS_SELECTOR, "form.who select")
    ]
    assert set(shown) == {"Speaker 1", "Speaker 2"}
    # Each segment's speaker shows in its speaker's colour.
    first = d.find_elements(By.CSS_SELECTOR, "form.who select")[shown.index("Speaker 2")]
    assert first.value_of_css_property("border-left-color") == speakers[1].value_of_css_property(
        "border-left-color"
    )

    pb.css(d, "#speaker-name-1").send_keys("Anna")
    pb.css(d, "#speaker-rename-1").click()
    pb.wait(d, lambda d: "Anna" in pb.css(d, "#speakers").get_attribute("innerHTML"))
    shown = [
        Select(e).first_selected_option.text
        for e in d.find_elements(By.CSS_SELECTOR, "form.who select")
    ]
    assert set(shown) == {"Speaker 1", "Anna"}
    # The first segment (Speaker 1's, who speaks first) moved to Anna by its menu alone.
    assert shown[0] == "Speaker 1"
    Select(d.find_elements(By.CSS_SELECTOR, "form.who select")[0]).select_by_visible_text("Anna")
    pb.wait(
        d,
        lambda d: (
            Select(
                d.find_elements(By.CSS_SELECTOR, "form.who select")[0]
            ).first_selected_option.text
            == "Anna"
        ),
    )

    status, vtt = pb.fetch_text(d, f"/recordings/{rid}/transcript.vtt")
    assert status == 200
    voices = re.findall(r"<v ([^>]+)>", vtt)
    assert voices[0] == "Anna" and set(voices) == {"Anna", "Speaker 1"}, vtt
    pb.screenshots(d, served.out, "speakers")
