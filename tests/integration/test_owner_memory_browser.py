"""The owner's settings and voices on the page, in a real headless Chromium against a
real `transcriber serve` (the session's page service, with real recognition and
diarization): remembering voices turned on on the settings screen, a speaker's voice
remembered from a conversation's page, listed on the voices screen and deleted there.
The settings are put back as they were: the page service is the session's."""

from __future__ import annotations

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.helpers import browser as pb
from tests.integration.test_speakers_browser import conversation_done


@pytest.mark.scenario("owner-settings", "The owner changes their defaults and voices on the page")
def test_settings_and_a_remembered_voice_on_the_page(
    page_served: pb.PageService, page_browser: WebDriver
) -> None:
    served, d = page_served, page_browser
    auth = {"Authorization": f"Bearer {served.token}"}
    before = httpx.get(f"{served.url}/v1/settings", headers=auth).json()
    try:
        d.get(served.url + "/signin")
        pb.css(d, "#token").send_keys(served.token)
        pb.css(d, "#signin-submit").click()
        pb.wait(d, lambda d: d.find_elements(By.ID, "upload-form"))
        pb.css(d, "#settings-nav").click()
        pb.wait(d, lambda d: d.find_elements(By.ID, "settings-form"))
        pb.css(d, "#setting-vocabulary").send_keys("Kubernetes\nAnna Petrova")
        if not pb.css(d, "#setting-remember").is_selected():
            pb.css(d, "#setting-remember").click()
        pb.css(d, "#settings-save").click()
        pb.wait(d, lambda d: d.find_elements(By.ID, "settings-saved"))
        kept = httpx.get(f"{served.url}/v1/settings", headers=auth).json()
        assert kept["remember_voices"] is True, kept
        assert kept["vocabulary"][-2:] == ["Kubernetes", "Anna Petrova"], kept

        rid, _ = conversation_done(served, "voices.wav", 11, "2", "Two voices again")
        d.get(f"{served.url}/recordings/{rid}")
        pb.wait(d, lambda d: d.find_elements(By.ID, "speaker-remember-1"))
        # A label is no voice's name: refused, with the reason.
        pb.css(d, "#voice-name-1").send_keys("Speaker 1")
        pb.css(d, "#speaker-remember-1").click()
        pb.wait(d, lambda d: d.find_elements(By.ID, "voices-error"))
        d.get(f"{served.url}/recordings/{rid}")
        pb.css(d, "#voice-name-1").send_keys("Mira")
        pb.css(d, "#speaker-remember-1").click()
        # The speaker it was taken from is called so at once.
        pb.wait(d, lambda d: "Mira" in pb.css(d, "#speakers").get_attribute("innerHTML"))
        d.get(f"{served.url}/voices")
        voices = pb.wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#voices li"))
        assert [v.find_element(By.TAG_NAME, "strong").text for v in voices] == ["Mira"]
        pb.screenshots(d, served.out, "voices")
        pb.css(d, "#voice-delete-0").click()
        pb.wait(d, lambda d: d.find_elements(By.ID, "voice-deleted"))
        assert d.find_elements(By.ID, "no-voices")
        assert httpx.get(f"{served.url}/v1/voices", headers=auth).json() == {"voices": []}
    finally:
        put_back = {k: v for k, v in before.items() if k != "updated_at"}
        httpx.patch(f"{served.url}/v1/settings", headers=auth, json=put_back)
