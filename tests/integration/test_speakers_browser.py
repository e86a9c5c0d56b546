"""Who spoke, on the owner's page in a real headless Chromium against a real `transcriber
serve` (the session's owner's page service and browser, which test_page_browser.py
uses too: tests/integration/conftest.py) with real recognition and real
diarization: a two-voice conversation of espeak-ng voices, its speakers in two colours,
renamed and a segment moved on the page, and the downloaded VTT naming them."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.expected_conditions import staleness_of
from selenium.webdriver.support.ui import Select

from tests.helpers import browser as pb
from transcriber.bench.speakers import make_conversation


@pytest.mark.scenario("speakers", "The owner renames a speaker on the page and the download has it")
def test_rename_a_speaker_and_download_the_vtt(
    page_served: pb.PageService, page_browser: WebDriver
) -> None:
    served, browser = page_served, page_browser
    rid, card = conversation_done(served, "two-voices.wav", 7, "auto", "Two voices")
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
    move_to(d, d.find_elements(By.CSS_SELECTOR, "form.who select")[0], "Anna")
    assert (
        Select(d.find_elements(By.CSS_SELECTOR, "form.who select")[0]).first_selected_option.text
        == "Anna"
    )

    status, vtt = pb.fetch_text(d, f"/recordings/{rid}/transcript.vtt")
    assert status == 200
    voices = re.findall(r"<v ([^>]+)>", vtt)
    assert voices[0] == "Anna" and set(voices) == {"Anna", "Speaker 1"}, vtt
    pb.screenshots(d, served.out, "speakers")


def move_to(d: WebDriver, menu: WebElement, name: str) -> None:
    """`name` chosen in a segment's menu, and the server's answer in place: the menu
    shows the choice at once, before the move is sent, so the wait is for the list the
    answer brings (the old one gone), not for the menu."""
    old = d.find_element(By.ID, "segments")
    Select(menu).select_by_visible_text(name)
    pb.wait(d, staleness_of(old), message=f"the move to {name} was not answered in place")


def page_rows(d: WebDriver) -> list[dict[str, str | None]]:
    """The record page's transcript rows: the speaker chosen in each one's menu, its text,
    and its address (segment, first word of a part)."""
    rows = []
    for li in d.find_elements(By.CSS_SELECTOR, "#segments li.segment"):
        rows.append(
            {
                "speaker": Select(
                    li.find_element(By.CSS_SELECTOR, "form.who select")
                ).first_selected_option.text,
                "text": li.find_element(By.CSS_SELECTOR, ".text").text,
                "segment": li.get_attribute("data-segment"),
                "word": li.get_attribute("data-word"),
            }
        )
    return rows


def srt_cues(srt: str) -> list[tuple[str, str]]:
    return re.findall(r"^([^:\n]+): (.*)$", srt, re.M)


@pytest.fixture(scope="module")
def batched_served(
    pg_admin_url: str, template_db: str, model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[pb.PageService]:
    """The owner's page with the service's own decoding, batched: one segment of each
    speech piece the VAD glues (cut again only at pauses of a second), so quick turns of
    two voices come back as one segment, as the issue's 30-second call did. The session's
    page service decodes sequentially (a segment per sentence)."""
    out = tmp_path_factory.mktemp("speaker-parts")
    with pb.page_service(pg_admin_url, template_db, model_dir, out, decoding="batched") as served:
        yield served


@pytest.mark.scenario("speakers", "The owner moves one part of a segment on the page, in a browser")
def test_move_one_part_of_a_split_segment(
    batched_served: pb.PageService, page_browser: WebDriver
) -> None:
    """A conversation of quick turns (espeak-ng, seed 3: 20 s, six turns) that the
    recognizer hears as one segment: the page lists it split at the speaker changes, as
    the SRT; one part moved by its menu changes that part alone, on the page and in the
    SRT; and the word being said is highlighted within a part."""
    served, d = batched_served, page_browser
    rid, _ = conversation_done(served, "quick-turns.wav", 3, "2", "Quick turns")

    d.get(served.url + "/signin")
    pb.css(d, "#token").send_keys(served.token)
    pb.css(d, "#signin-submit").click()
    pb.wait(d, lambda d: d.find_elements(By.ID, "upload-form"))
    d.get(f"{served.url}/recordings/{rid}")
    pb.wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#segments li.segment"))
    before = page_rows(d)
    status, srt = pb.fetch_text(d, f"/recordings/{rid}/transcript.srt?profile=segments")
    assert status == 200
    assert [(r["speaker"], r["text"]) for r in before] == srt_cues(srt), (before, srt)
    # A speaker change inside one recognizer segment: parts of it under both speakers.
    parts = [r for r in before if r["word"] is not None]
    assert len({r["segment"] for r in parts}) < len(parts), before
    assert {r["speaker"] for r in parts} == {"Speaker 1", "Speaker 2"}, before

    # The word being said is highlighted within a part.
    part_at = before.index(parts[1])
    pb.wait(
        d, lambda d: d.execute_script("return document.getElementById('player').readyState") >= 1
    )
    d.execute_script(
        "const p = document.getElementById('player'); p.muted = true;"
        "p.currentTime = Number(document.getElementById(arguments[0]).dataset.start) + 0.05;"
        "p.play();",
        f"segment-{part_at}",
    )
    pb.wait(
        d,
        lambda d: d.execute_script(
            "return !!document.querySelector('li.segment[data-word] .word.current')"
        ),
        message="no word highlighted within a part",
    )
    d.execute_script("document.getElementById('player').pause()")

    # The second part to the other speaker, by its menu alone.
    other = "Speaker 1" if parts[1]["speaker"] == "Speaker 2" else "Speaker 2"
    menu = d.find_elements(By.CSS_SELECTOR, "#segments li.segment form.who select")[part_at]
    move_to(d, menu, other)
    after = page_rows(d)
    expected = [dict(r) for r in before]
    expected[part_at]["speaker"] = other
    assert after == expected
    status, srt = pb.fetch_text(d, f"/recordings/{rid}/transcript.srt?profile=segments")
    assert [(r["speaker"], r["text"]) for r in after] == srt_cues(srt), (after, srt)
    pb.screenshots(d, served.out, "speaker-parts")


def conversation_done(
    served: pb.PageService, name: str, seed: int, speakers: str, title: str
) -> tuple[str, dict]:
    """A two-voice conversation (six turns, `seed`) uploaded asking `speakers`, waited
    for until done: its id and card."""
    wav = served.out / name
    make_conversation(wav, speakers=2, turns=6, seed=seed)
    auth = {"Authorization": f"Bearer {served.token}"}
    with wav.open("rb") as f:
        r = httpx.post(
            f"{served.url}/v1/recordings",
            headers=auth,
            files={"file": (name, f, "audio/wav")},
            data={"speakers": speakers, "language": "en", "title": title},
            timeout=60,
        )
    assert r.status_code == 201, r.text
    rid = r.json()["id"]
    deadline = time.monotonic() + pb.RECOGNITION_WAIT_S
    while not (card := httpx.get(f"{served.url}/v1/recordings/{rid}", headers=auth).json())["done"]:
        assert card["stopped"] is None and time.monotonic() < deadline, card
        time.sleep(0.5)
    return rid, card
