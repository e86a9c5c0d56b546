"""The page's upload with a vocabulary and the owner's text ("I have the text") in a real
headless Chromium against a real `transcriber serve` with the bundled model (the
session's page service, tests/integration/conftest.py)."""

from __future__ import annotations

import json

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.helpers import browser as pb


@pytest.mark.scenario("subtitles", "The page uploads with a vocabulary and the owner's text")
def test_the_page_uploads_with_a_vocabulary_and_the_owners_text(
    page_served: pb.PageService, page_browser: WebDriver
) -> None:
    served, d = page_served, page_browser
    d.get(served.url + "/signin")
    pb.css(d, "#token").send_keys(served.token)
    pb.css(d, "#signin-submit").click()
    pb.wait(d, lambda d: d.find_elements(By.ID, "upload-form"))
    text = (pb.ROOT / "samples" / "en.txt").read_text().strip().replace("March", "Marchtober")

    pb.css(d, "#files").send_keys(str(pb.ROOT / "samples" / "en.ogg"))
    pb.wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#queue li"))
    pb.css(d, "#title-0").send_keys("Aligned meeting")
    pb.css(d, "#vocabulary").send_keys("Marchtober, Quarterly Corp")
    pb.css(d, "#align summary").click()
    # Set as pasted (typing 200 characters key by key is slow and adds nothing).
    d.execute_script("document.getElementById('align-text').value = arguments[0]", text)
    pb.css(d, "#upload-start").click()
    link = pb.wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#queue .msg a"))[0]
    rid = link.get_attribute("href").rsplit("/", 1)[-1]

    d.get(f"{served.url}/recordings/{rid}")
    pb.wait(
        d,
        lambda d: d.find_elements(By.ID, "transcript-title"),
        pb.RECOGNITION_WAIT_S,
        "the aligned sample did not reach transcribed",
    )
    assert pb.css(d, "#vocabulary").text == "Marchtober, Quarterly Corp"
    assert pb.css(d, "#aligned").is_displayed()
    status, body = pb.fetch_text(d, f"/recordings/{rid}/transcript.json")
    assert status == 200, body
    segments = json.loads(body)["segments"]
    assert [w for s in segments for w in s["text"].split()] == text.split()
    assert [w["word"].strip() for s in segments for w in s["words"]] == text.split()
