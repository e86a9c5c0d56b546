"""The owner's page in a real headless Chromium (Debian's `chromium` and
`chromium-driver`, driven by Selenium pointed at /usr/bin/chromedriver, so nothing is
ever downloaded), against a real `transcriber serve` on a loopback port with real
recognition. One service and one browser for the session (tests/integration/conftest.py;
test_speakers_browser.py uses them after this module); the tests run in file order and
build on each other (sign in, upload, listen, correct, edit, sign out), as a
person would use the page (the editor's tools, the page in Russian).

Screenshots of the list and the record page, light and dark, in English and Russian,
and the measured figures (page weight, upload-to-transcript time) go to the service's
output folder, printed at the start; they are never committed.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable

import httpx
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from tests.helpers.browser import (
    RECOGNITION_WAIT_S,
    ROOT,
    PageService,
    chromium,
    css,
    fetch_text,
    screenshots,
    sql,
    wait,
)
from tests.helpers.page_reading import (
    current_segment,
    paused,
    player_time,
    press,
    row_of,
    segment_texts,
)
from transcriber.owners import token_hash

Served = PageService


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("page", title)


@pytest.fixture
def served(page_served: Served) -> Served:
    """The session's owner's page service (tests/integration/conftest.py)."""
    return page_served


@pytest.fixture
def browser(page_browser: WebDriver) -> WebDriver:
    return page_browser


# --- the tests, in order -------------------------------------------------------------------


@scenario("Uploaded files show their progress and reach transcribed without a reload")
@scenario("Signing in sets a strict session cookie and signing out ends it")
def test_sign_in_upload_and_watch_it_transcribe(served: Served, browser: WebDriver) -> None:
    d = browser
    d.get(served.url + "/")
    wait(d, lambda d: "/signin" in d.current_url)
    css(d, "#token").send_keys("tr_wrong")
    css(d, "#signin-submit").click()
    wait(d, lambda d: "not an owner" in css(d, "#token-error").text)
    css(d, "#token").send_keys(served.token)
    css(d, "#signin-submit").click()
    wait(d, lambda d: d.find_elements(By.ID, "upload-form"))
    cookie = d.get_cookie("transcriber_session")
    assert cookie and cookie["httpOnly"] and cookie["sameSite"] == "Strict"

    bad = served.out / "notes.wav"
    bad.write_text("these are meeting notes, not audio\n")
    d.execute_script("window.notReloaded = true")
    css(d, "#files").send_keys(f"{ROOT / 'samples' / 'en.ogg'}\n{bad}")
    wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#queue li")) == 2)
    css(d, "#title-0").send_keys("Quarterly meeting")
    css(d, "#title-1").send_keys("Meeting notes")
    served.upload_started = started = time.monotonic()
    css(d, "#upload-start").click()
    wait(
        d,
        lambda d: all(
            "Accepted" in m.text for m in d.find_elements(By.CSS_SELECTOR, "#queue .msg")
        ),
    )
    bars = d.find_elements(By.CSS_SELECTOR, "#queue progress")
    assert [b.get_attribute("value") for b in bars] == ["1", "1"]

    # Without a reload the list shows the record move to transcribed, and the text
    # file stopped with its reason in words.
    wait(
        d,
        lambda d: (r := row_of(d, "Quarterly meeting")) is not None and r["state"] == "transcribed",
        RECOGNITION_WAIT_S,
        "samples/en.ogg did not reach transcribed on the list",
    )
    served.figures["upload_to_transcribed_on_list_s"] = round(time.monotonic() - started, 2)
    notes = wait(
        d, lambda d: (r := row_of(d, "Meeting notes")) is not None and r["state"] == "stopped" and r
    )
    assert "The file could not be read as audio." in notes["text"]
    assert d.execute_script("return window.notReloaded") is True
    served.record = row_of(d, "Quarterly meeting")["href"].rsplit("/", 1)[-1]
    screenshots(d, served.out, "list")

    # The stopped record's page says what happened, when, and what to do.
    d.get(served.url + notes["href"])
    stopped = wait(d, lambda d: d.find_elements(By.ID, "stopped"))[0]
    assert "The file could not be read as audio." in stopped.text
    assert "What you can do:" in stopped.text and "Stopped" in stopped.text


@scenario("The highlighted segment follows playback and a segment seeks the player")
def test_playback_highlights_and_a_click_seeks(served: Served, browser: WebDriver) -> None:
    assert served.record, "the upload test did not run"
    d = browser
    d.get(f"{served.url}/recordings/{served.record}")
    segments = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, ".segment"))
    served.figures["segments"] = len(segments)
    assert len(segments) >= 2
    served.figures["upload_to_transcript_on_record_page_s"] = round(
        time.monotonic() - served.upload_started, 2
    )
    wait(d, lambda d: d.execute_script("return document.getElementById('player').readyState") >= 1)

    # Play from the start, fast: the highlight moves on to later segments by itself.
    d.execute_script(
        "const p = document.getElementById('player');"
        "p.playbackRate = 4; p.currentTime = 0; p.play();"
    )
    wait(d, lambda d: current_segment(d) == 0, message="no segment highlighted on play")
    # Within the segment, the word being said (timings loaded on the first play).
    first_word = wait(
        d,
        lambda d: d.execute_script(
            "const w = document.querySelector('.segment .word.current'); return w && w.textContent"
        ),
    )
    wait(
        d,
        lambda d: d.execute_script(
            "const w = document.querySelector('.segment .word.current');"
            "return w && w.textContent !== arguments[0]",
            first_word,
        ),
        message="the highlighted word did not move",
    )
    wait(d, lambda d: (current_segment(d) or 0) >= 1, message="the highlight did not move")
    d.execute_script("document.getElementById('player').pause()")
    assert css(d, ".segment.current").get_attribute("aria-current") == "true"

    # Clicking a segment seeks the player to its start and highlights it.
    last = segments[-1]
    start = float(last.get_attribute("data-start"))
    css(last, ".text").click()
    wait(
        d,
        lambda d: (
            abs(d.execute_script("return document.getElementById('player').currentTime") - start)
            < 0.5
            and current_segment(d) == len(segments) - 1
        ),
        message="the click did not seek",
    )
    d.execute_script("document.getElementById('player').pause()")
    # The keyboard does the same through the segment's time button.
    first = segments[0].find_element(By.CSS_SELECTOR, ".seek")
    d.execute_script("arguments[0].focus()", first)
    d.switch_to.active_element.send_keys("\n")
    wait(d, lambda d: current_segment(d) == 0)
    d.execute_script("document.getElementById('player').pause()")

    # The page's weight: the record page's HTML, its stylesheet and scripts.
    cookies = {"transcriber_session": d.get_cookie("transcriber_session")["value"]}
    weight = len(httpx.get(d.current_url, cookies=cookies).content)
    for src in d.execute_script(
        "return [...document.querySelectorAll('script[src], link[rel=stylesheet]')]"
        ".map(e => e.src || e.href)"
    ):
        weight += len(httpx.get(src).content)
    served.figures["record_page_bytes_html_js_css"] = weight
    screenshots(d, served.out, "record")


@scenario("A corrected word is in the downloaded SRT and the machine text stays available")
@scenario("A correction too long or with control characters is refused next to the field")
def test_correct_a_word_and_edit_the_title(served: Served, browser: WebDriver) -> None:
    d = browser
    d.get(f"{served.url}/recordings/{served.record}")
    segment = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#segment-0"))[0]
    machine = css(segment, ".text").text
    fixed = "Zanzibar " + machine.split(" ", 1)[-1]
    css(segment, ".fix").click()
    area = wait(d, lambda d: d.find_elements(By.ID, "fix-0"))[0]
    assert d.switch_to.active_element == area

    # Refused: a control character, then too long; the message is next to the field.
    for bad, words in (("bell\u0007", "control characters"), ("x" * 2001, "at most 2000")):
        d.execute_script("arguments[0].value = arguments[1]", area, bad)
        css(segment, "form.correction .save").click()
        error = wait(d, lambda d: (e := css(d, "#segment-0 #fix-error-0")).text and e)
        assert words in error.text
        assert area.get_attribute("aria-invalid") == "true"
        assert area.get_attribute("aria-describedby") == "fix-error-0"
    assert css(segment, ".text").text == machine

    area.clear()
    area.send_keys(fixed)
    css(segment, "form.correction .save").click()
    wait(d, lambda d: css(d, "#segment-0 .text").text == fixed)
    assert machine in css(d, "#segment-0 .machine").text
    status, srt = fetch_text(d, f"/recordings/{served.record}/transcript.srt")
    assert status == 200 and "Zanzibar" in srt
    status, original = fetch_text(d, f"/recordings/{served.record}/transcript.srt?machine=true")
    assert "Zanzibar" not in original
    api = httpx.get(
        f"{served.url}/v1/recordings/{served.record}/transcript.srt",
        headers={"Authorization": f"Bearer {served.token}"},
    )
    assert "Zanzibar" in api.text
    d.refresh()
    assert "Zanzibar" in wait(d, lambda d: css(d, "#segment-0 .text")).text

    # The title, edited on the same page.
    css(d, "#edit-details summary").click()
    title = css(d, "#edit-title")
    title.clear()
    title.send_keys("Q3 planning")
    css(d, "#edit-save").click()
    wait(d, lambda d: css(d, "#record-title").text == "Q3 planning")


@scenario("Find and replace saves corrections with a count, and undo puts them back")
def test_find_and_replace_then_undo(served: Served, browser: WebDriver) -> None:
    d = browser
    d.get(f"{served.url}/recordings/{served.record}")
    wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#find-replace"))
    before = segment_texts(d)
    assert before[0][1], "segment 0 was corrected by the test before"
    _, txt_before = fetch_text(d, f"/recordings/{served.record}/transcript.txt")
    # The word found in most segments (substring matches count, as the page counts them).
    texts = [t.lower() for t, _ in before]
    word = max(
        sorted(set(re.findall(r"[a-z]{3,}", " ".join(texts)))),
        key=lambda w: (sum(w in t for t in texts), sum(t.count(w) for t in texts)),
    )
    assert sum(word in t for t in texts) >= 2, (word, texts)
    matches = sum(t.count(word) for t in texts)

    css(d, "#find").send_keys(word)
    wait(d, lambda d: css(d, "#find-count").text == f"{matches} found")
    assert len(d.find_elements(By.CSS_SELECTOR, ".segment.match")) == sum(word in t for t in texts)
    css(d, "#replace").send_keys("Quux")
    css(d, "#replace-all").click()
    wait(d, lambda d: css(d, "#find-count").text == f"Replaced {matches} and saved.")
    replaced = [(re.sub(re.escape(word), "Quux", t, flags=re.I), c) for t, c in before]
    after = segment_texts(d)
    assert [t for t, _ in after] == [t for t, _ in replaced]
    # Every segment that changed is the owner's correction now, and the export has it.
    assert all(c for (t, c), (b, _) in zip(after, before, strict=True) if t != b)
    _, txt = fetch_text(d, f"/recordings/{served.record}/transcript.txt")
    assert txt.count("Quux") == matches

    # One step of undo: every segment as before — the corrected one still corrected, the
    # others back at the machine's text — and so is the export, after a reload too.
    css(d, "#replace-undo").click()
    changed = sum(t != b for (t, _), (b, _) in zip(after, before, strict=True))
    said = (
        "Undone: 1 segment back as it was."
        if changed == 1
        else f"Undone: {changed} segments back as they were."
    )
    wait(d, lambda d: css(d, "#find-count").text == said)
    assert segment_texts(d) == before
    assert css(d, "#replace-undo").get_attribute("disabled") is not None
    _, txt = fetch_text(d, f"/recordings/{served.record}/transcript.txt")
    assert txt == txt_before
    d.refresh()
    assert wait(d, lambda d: segment_texts(d)) == before


@scenario("Shortcuts, speed and the waveform move playback")
def test_shortcuts_speed_and_waveform(served: Served, browser: WebDriver) -> None:
    d = browser
    d.get(f"{served.url}/recordings/{served.record}")
    segments = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, ".segment"))
    starts = [float(s.get_attribute("data-start")) for s in segments]
    wait(d, lambda d: d.execute_script("return document.getElementById('player').readyState") >= 1)
    assert "Play or pause" in (css(d, "#shortcuts").get_attribute("textContent") or "")
    d.execute_script("const p = document.getElementById('player'); p.pause(); p.currentTime = 0")
    css(d, "#record-title").click()  # the focus on the page, in no field

    def at(t: float) -> Callable[[WebDriver], bool]:
        return lambda d: abs(player_time(d) - t) < 0.3

    press(d, "l")
    wait(d, at(5), message="L did not move 5 s forward")
    press(d, "j")
    wait(d, at(0), message="J did not move 5 s back")
    press(d, Keys.ARROW_RIGHT)
    wait(d, at(5))
    press(d, Keys.ARROW_LEFT)
    wait(d, at(0))
    press(d, "n")
    wait(d, lambda d: current_segment(d) == 1 and at(starts[1])(d), message="N: no next segment")
    assert paused(d)  # moving between segments keeps a paused player paused
    press(d, "n")
    wait(d, lambda d: current_segment(d) == 2)
    press(d, "p")
    wait(d, lambda d: current_segment(d) == 1 and at(starts[1])(d), message="P: no previous")
    press(d, "k")
    wait(d, lambda d: not paused(d), message="K did not play")
    press(d, "k")
    wait(d, paused, message="K did not pause")
    playing = current_segment(d)
    press(d, "e")
    area = wait(d, lambda d: d.find_elements(By.ID, f"fix-{playing}"))[0]
    assert d.switch_to.active_element == area
    # While typing, a plain key is a letter and Alt with it the shortcut.
    t = player_time(d)
    press(d, "l")
    assert area.get_attribute("value").endswith("l") and at(t)(d)
    press(d, "l", alt=True)
    wait(d, at(t + 5), message="Alt+L in a field did not move playback")
    press(d, Keys.ESCAPE)
    wait(d, lambda d: not d.find_elements(By.ID, f"fix-{playing}"))

    # Speed: picked, then slower and faster by keys, remembered over a reload.
    Select(css(d, "#speed")).select_by_value("1.5")
    rate = "return document.getElementById('player').playbackRate"
    assert d.execute_script(rate) == 1.5
    css(d, "#record-title").click()
    press(d, "-")
    assert d.execute_script(rate) == 1.25 and css(d, "#speed").get_attribute("value") == "1.25"
    press(d, "=")
    press(d, "=")
    assert d.execute_script(rate) == 1.75
    d.refresh()
    wait(d, lambda d: d.execute_script(rate) == 1.75)
    Select(css(d, "#speed")).select_by_value("1")

    # The waveform: drawn from the server's peaks; a click in its middle plays from the
    # middle of the recording.
    canvas = wait(d, lambda d: (c := css(d, "#waveform")).get_attribute("data-ready") == "1" and c)
    status, body = fetch_text(d, f"/recordings/{served.record}/peaks.json")
    waveform = json.loads(body)
    assert status == 200 and 100 <= len(waveform["peaks"]) <= 1000
    assert max(waveform["peaks"]) > 50  # speech, not silence
    duration = d.execute_script("return document.getElementById('player').duration")
    assert abs(waveform["duration_s"] - duration) < 0.1
    ActionChains(d).move_to_element(canvas).click().perform()
    wait(d, at(duration / 2), message="a click on the waveform did not move playback")
    served.figures["waveform_peaks"] = len(waveform["peaks"])


@scenario("The switch turns the list Russian and the choice is remembered")
def test_switch_to_russian_and_it_is_remembered(served: Served, browser: WebDriver) -> None:
    d = browser
    d.get(served.url + "/")
    wait(d, lambda d: row_of(d, "Meeting notes") is not None)
    assert d.execute_script("return document.documentElement.lang") == "en"
    css(d, "#lang-ru").click()
    wait(d, lambda d: d.execute_script("return document.documentElement.lang") == "ru")

    def russian_list(d: WebDriver) -> None:
        assert css(d, "h1").text == "Мои записи"
        assert "Название" in css(d, "#list thead").text
        notes = row_of(d, "Meeting notes")
        assert notes is not None and "Файл не удалось прочитать как звук." in notes["text"]
        planning = row_of(d, "Q3 planning")
        assert planning is not None and "Расшифрована" in planning["text"]
        # Its date and duration, as Russian writes them (CLDR's no-break spaces); the
        # time in the browser's zone, named (the page's script: UTC here, GMT±N elsewhere).
        assert re.search(r"\d+ \w+\. 20\d\d\s+г\., \d?\d:\d\d\s(UTC|GMT\S*)", planning["text"])
        assert re.search(r"\t\d+\s+с\t", planning["text"]), planning["text"]

    russian_list(d)
    assert (d.get_cookie("transcriber_lang") or {}).get("value") == "ru"
    d.refresh()
    wait(d, lambda d: css(d, "h1").text == "Мои записи")
    russian_list(d)
    screenshots(d, served.out, "list-ru")

    # A language hint the recognizer does not know is refused before anything is sent,
    # in the page's language; the file stays ready for a known one.
    def ids() -> list[str]:
        listed = httpx.get(
            served.url + "/v1/recordings?limit=100",
            headers={"Authorization": f"Bearer {served.token}"},
        )
        return [c["id"] for c in listed.json()["items"]]

    before = ids()
    memo = served.out / "hint.wav"
    memo.write_bytes(b"not audio")
    css(d, "#files").send_keys(str(memo))
    css(d, "#language").send_keys("rus")
    css(d, "#upload-start").click()
    error = wait(d, lambda d: (e := css(d, "#language-error")).is_displayed() and e)
    assert "распознаватель не знает языка «rus»" in error.text, error.text
    assert css(d, "#language").get_attribute("aria-invalid") == "true"
    assert "Отказано" not in css(d, "#queue").text and css(d, "#upload-start").is_enabled()
    assert ids() == before
    assert (
        d.execute_script(
            "return document.querySelector('#language-codes option[value=ru]').textContent"
        )
        == "русский"
    )
    css(d, "#queue .remove").click()
    css(d, "#language").clear()

    # The record page, and its script's own messages.
    d.get(f"{served.url}/recordings/{served.record}")
    wait(d, lambda d: css(d, "#transcript-title").text == "Расшифровка")
    assert css(d, "#shortcuts summary").text == "Клавиши"
    css(d, "#find").send_keys("zzzzqq")
    wait(d, lambda d: css(d, "#find-count").text == "Ничего не найдено.")
    css(d, "#find").clear()
    screenshots(d, served.out, "record-ru")
    # The stopped record's page says what happened and what to do, in Russian.
    d.get(served.url + "/")
    href = wait(d, lambda d: row_of(d, "Meeting notes"))["href"]
    d.get(served.url + href)
    stopped = wait(d, lambda d: d.find_elements(By.ID, "stopped"))[0]
    assert "Что можно сделать:" in stopped.text and "загрузите её снова" in stopped.text
    # Back to English for the tests after this one.
    css(d, "#lang-en").click()
    wait(d, lambda d: d.execute_script("return document.documentElement.lang") == "en")
    assert "What you can do:" in css(d, "#stopped").text


@scenario("A browser asking for Russian gets Russian without the switch")
def test_accept_language_russian_without_the_switch(served: Served) -> None:
    d = chromium(served.out / "chromium-profile-ru", accept_language="ru-RU,ru,en")
    try:
        d.get(served.url + "/")
        wait(d, lambda d: "/signin" in d.current_url)
        assert d.execute_script("return document.documentElement.lang") == "ru"
        assert css(d, "h1").text == "Войти" and css(d, "#signin-submit").text == "Войти"
        assert d.get_cookie("transcriber_lang") is None
        css(d, "#token").send_keys("tr_wrong")
        css(d, "#signin-submit").click()
        wait(d, lambda d: "Это не токен API владельца" in css(d, "#token-error").text)
        # A language picked wins over what the browser asks for.
        css(d, "#lang-en").click()
        wait(d, lambda d: css(d, "h1").text == "Sign in")
        d.refresh()
        assert css(d, "h1").text == "Sign in"
        assert "/signin" in d.current_url
    finally:
        d.quit()


@scenario(
    "A revoked token or an expired session sends the owner back to sign in "
    "without losing the upload form"
)
def test_revoked_session_keeps_the_upload_form(served: Served, browser: WebDriver) -> None:
    d = browser
    d.get(served.url + "/")
    memo = served.out / "memo.wav"
    memo.write_bytes(b"not audio either")
    css(d, "#files").send_keys(str(memo))
    css(d, "#title-0").send_keys("Kept title")
    css(d, "#language").send_keys("ru")
    # The token is rotated behind the page's back: the session ends with it.
    new_token = "tr_rotated_" + uuid.uuid4().hex
    sql(
        served.db_url,
        f"UPDATE owners SET token_hash = '\\x{token_hash(new_token).hex()}' WHERE name = 'ann'",
    )
    css(d, "#upload-start").click()
    dialog = wait(
        d, lambda d: (e := css(d, "#signin-dialog")).get_attribute("open") is not None and e
    )
    assert css(d, "#title-0").get_attribute("value") == "Kept title"
    assert css(d, "#language").get_attribute("value") == "ru"
    assert "memo.wav" in css(d, "#queue").text
    css(dialog, "#signin-again-token").send_keys(served.token)
    css(dialog, "#signin-again-submit").click()
    wait(d, lambda d: "not an owner" in css(d, "#signin-again-error").text)
    css(dialog, "#signin-again-token").clear()
    css(dialog, "#signin-again-token").send_keys(new_token)
    css(dialog, "#signin-again-submit").click()
    wait(d, lambda d: "Accepted" in css(d, "#queue .msg").text)
    served.token = new_token
    wait(d, lambda d: row_of(d, "Kept title") is not None)


@pytest.mark.scenario(
    "sharing", "A link shared from the page opens in a fresh browser and is refused once revoked"
)
def test_share_open_in_a_fresh_browser_and_revoke(served: Served, browser: WebDriver) -> None:
    d = browser
    d.get(f"{served.url}/recordings/{served.record}")
    css(d, "#shares summary").click()
    css(d, "#share-note").send_keys("for Bob")
    css(d, "#share-make").click()
    link = wait(d, lambda d: css(d, "#new-share").get_attribute("value"))
    assert link.startswith(f"{served.url}/s/")
    # Its Copy button puts it on the clipboard, and says so.
    d.execute_cdp_cmd(
        "Browser.grantPermissions",
        {"origin": served.url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
    )
    css(d, "#new-share-copy").click()
    wait(d, lambda d: css(d, "#new-share-copied").text == "Copied.")
    copied = d.execute_async_script(
        "navigator.clipboard.readText().then(arguments[0], () => arguments[0](null))"
    )
    assert copied == link
    screenshots(d, served.out, "record-shares")

    stranger = chromium(served.out / "stranger-profile")  # no cookie, no token
    try:
        stranger.get(link)
        wait(stranger, lambda s: "Zanzibar" in css(s, "#segments").text)
        assert css(stranger, "#shared-title").text == "Q3 planning"
        assert not stranger.find_elements(By.CSS_SELECTOR, "form")
        screenshots(stranger, served.out, "share-view")

        # A reload of the page the form led to reads it again (the form answered with a
        # redirect): no second link, and the secret is not shown again.
        d.refresh()
        css(d, "#shares summary").click()
        entries = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#share-list li"))
        assert len(entries) == 1 and not d.find_elements(By.ID, "new-share")
        entry = entries[0]
        assert "for Bob" in entry.text and css(entry, ".opened").text == "1"
        # Revoking asks first: declined, the link stays.
        css(entry, "button.revoke").click()
        d.switch_to.alert.dismiss()
        assert d.find_elements(By.CSS_SELECTOR, "#share-list li button.revoke")
        css(d, "#share-list li button.revoke").click()
        d.switch_to.alert.accept()
        # Put in place: the link says when it was revoked, and has no Revoke any more.
        wait(d, lambda d: not d.find_elements(By.CSS_SELECTOR, "#share-list li button.revoke"))
        assert css(d, "#share-list li time").is_displayed()

        stranger.refresh()
        wait(stranger, lambda s: s.find_elements(By.ID, "share-gone"))
        assert "Zanzibar" not in stranger.page_source
    finally:
        stranger.quit()


@pytest.mark.scenario("page", "The owner deletes recordings from the list after confirming")
def test_delete_from_the_list(served: Served, browser: WebDriver) -> None:
    d = browser
    d.get(served.url + "/")
    row = wait(d, lambda d: row_of(d, "Kept title"))
    rid = row["href"].rsplit("/", 1)[-1]
    css(d, f"#select-{rid}").click()
    css(d, "#delete-selected-button").click()
    d.switch_to.alert.dismiss()  # asked first; declined, nothing goes
    assert row_of(d, "Kept title") is not None
    css(d, "#delete-selected-button").click()
    alert = d.switch_to.alert
    assert "for good" in alert.text
    alert.accept()
    wait(
        d,
        lambda d: d.current_url == served.url + "/?deleted=1" and row_of(d, "Kept title") is None,
    )
    assert row_of(d, "Q3 planning") is not None
    api = httpx.get(
        f"{served.url}/v1/recordings/{rid}", headers={"Authorization": f"Bearer {served.token}"}
    )
    assert api.status_code == 404


@scenario("Signing in sets a strict session cookie and signing out ends it")
def test_sign_out_and_be_refused(served: Served, browser: WebDriver) -> None:
    d = browser
    d.get(f"{served.url}/recordings/{served.record}")
    css(d, "#signout").click()
    wait(d, lambda d: d.current_url.endswith("/signin"))
    d.get(f"{served.url}/recordings/{served.record}")
    wait(d, lambda d: "/signin?next=" in d.current_url)
    status, _ = fetch_text(d, f"/recordings/{served.record}/transcript.srt")
    assert status == 401
