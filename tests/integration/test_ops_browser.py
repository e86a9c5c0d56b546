"""The operator's screen in a real headless Chromium (Debian's `chromium` and
`chromium-driver` through Selenium, as tests/integration/test_page_browser.py), against
a real `transcriber serve` with real recognition on a loopback port.

The flow, in file order: an operator signs in at /ops; an owner uploads samples/en.ogg
through the API while the service limits audio to 5 s, so it stops `too_long` and the
glance shows the stop appear without a reload; the service is restarted without the
limit (the cause fixed); the operator finds the record, reads its stop flag and journal,
resumes it and watches it reach `transcribed`. The operator's session is refused the
owner's transcript and audio; after signing out, an owner's session is refused
everywhere under /ops. Screenshots (light, dark, phone) and figures go to the module's
output folder, printed at the start; they are never committed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.helpers.browser import (
    RECOGNITION_WAIT_S,
    ROOT,
    ServeProcess,
    browser_session,
    cli_token,
    css,
    fetch_text,
    screenshots,
    service_database,
    service_env,
    wait,
)


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("operations", title)


@attrs.define
class Served:
    serve: ServeProcess
    owner_token: str
    operator_token: str
    out: Path
    figures: dict[str, Any] = attrs.field(factory=dict)
    record: str | None = None

    @property
    def url(self) -> str:
        return self.serve.url

    def start(self, **extra: str) -> None:
        self.serve.start(**extra)

    def stop(self) -> None:
        self.serve.stop()


@pytest.fixture(scope="module")
def served(
    pg_admin_url: str, template_db: str, model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    out = tmp_path_factory.mktemp("ops-browser")
    print(f"\noperator's screen screenshots and figures: {out}")
    with service_database(pg_admin_url, template_db, "t_ops") as db_url:
        env = service_env(db_url, out / "home", model_dir)
        owner_token = cli_token(env, "owner", "add", "ann")
        operator_token = cli_token(env, "operator", "add", "olga")
        served = Served(ServeProcess(env, out / "serve.log"), owner_token, operator_token, out)
        # First with a 5 s limit: samples/en.ogg (14 s) stops `too_long`.
        served.start(TRANSCRIBER_MAX_DURATION_S="5")
        try:
            yield served
            (out / "figures.json").write_text(json.dumps(served.figures, indent=2))
            print(f"\noperator's screen figures: {json.dumps(served.figures)}")
        finally:
            served.stop()


@pytest.fixture(scope="module")
def browser(served: Served) -> Iterator[WebDriver]:
    # Its own Chromium: the owner's page's service (another port, the same host) would
    # share its cookies with this one.
    with browser_session(served.out / "chromium-profile", window="1280,900") as driver:
        yield driver


def stopped_count(d: WebDriver) -> int:
    return int(
        d.execute_script(
            "let n = 0; for (const td of document.querySelectorAll('#milestones td.stopped'))"
            " n += Number(td.textContent.trim()); return n;"
        )
    )


# --- the tests, in order -----------------------------------------------------------------


@scenario("An operator signs in, sees a stop appear, resumes it and watches it finish")
def test_sign_in_see_a_stop_resume_and_finish(served: Served, browser: WebDriver) -> None:
    d = browser
    d.get(served.url + "/ops")
    wait(d, lambda d: "/ops/signin" in d.current_url)
    css(d, "#token").send_keys(served.owner_token)  # an owner's token is refused
    css(d, "#signin-submit").click()
    wait(d, lambda d: "not an operator" in css(d, "#token-error").text)
    css(d, "#token").send_keys(served.operator_token)
    css(d, "#signin-submit").click()
    wait(d, lambda d: d.find_elements(By.ID, "milestones"))
    cookie = d.get_cookie("transcriber_ops_session")
    assert cookie and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/ops"
    wait(d, lambda d: "running" in css(d, ".daemon").text)
    assert stopped_count(d) == 0
    d.execute_script("window.notReloaded = true")

    with httpx.Client(base_url=served.url, timeout=60) as api:
        r = api.post(
            "/v1/recordings",
            headers={"authorization": f"Bearer {served.owner_token}"},
            files={"file": ("en.ogg", (ROOT / "samples" / "en.ogg").read_bytes(), "audio/ogg")},
        )
    assert r.status_code == 201, r.text
    served.record = r.json()["id"]
    started = time.monotonic()
    # The glance refreshes itself: the stop appears without a reload.
    wait(d, lambda d: stopped_count(d) == 1, 60, "the stop did not appear on the glance")
    assert d.execute_script("return window.notReloaded") is True
    served.figures["upload_to_stop_on_glance_s"] = round(time.monotonic() - started, 2)
    wait(d, lambda d: "too_long" in css(d, ".ops-charts").text)
    screenshots(d, served.out, "glance")

    # The cause fixed: the service again, without the limit.
    served.stop()
    served.start()

    d.get(served.url + "/ops/stopped?reason=too_long")
    row = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, f'tr[data-id="{served.record}"]'))
    assert "ann" in row[0].text and "en.ogg" in row[0].text
    screenshots(d, served.out, "stopped")
    css(d, f'tr[data-id="{served.record}"] a').click()
    wait(d, lambda d: d.find_elements(By.ID, "stop-flag"))
    assert css(d, "#stop-reason").text == "too_long"
    assert "the limit is 5s" in css(d, "#stop-error").text
    assert "stopped" in css(d, "#journal").text
    screenshots(d, served.out, "record")
    css(d, "#resume-one").click()
    outcome = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#resumed tr.ok"))
    assert "back to work from received" in outcome[0].text
    resumed_at = time.monotonic()
    screenshots(d, served.out, "resumed")

    def finished(d: WebDriver) -> bool:
        d.get(f"{served.url}/ops/records/{served.record}")
        return css(d, "#milestone").text.startswith("transcribed")

    wait(d, finished, RECOGNITION_WAIT_S, "the resumed record did not reach transcribed")
    served.figures["resume_to_transcribed_s"] = round(time.monotonic() - resumed_at, 2)
    journal = css(d, "#journal").text
    assert "human" in journal and "operator:olga" in journal
    assert not d.find_elements(By.ID, "stop-flag")


@scenario("In the browser, the operator is refused the transcript and the audio")
def test_operator_refused_transcript_and_audio(served: Served, browser: WebDriver) -> None:
    d = browser
    assert served.record is not None
    d.get(f"{served.url}/ops/records/{served.record}")
    for path in (
        f"/recordings/{served.record}/transcript.txt",
        f"/recordings/{served.record}/audio",
        f"/v1/recordings/{served.record}/transcript",
        f"/ops/records/{served.record}/audio",
    ):
        status, text = fetch_text(d, path)
        assert status in (401, 404), (path, status)
        assert "transcript" not in text.lower() or status != 200
    with httpx.Client(base_url=served.url) as api:
        words = api.get(
            f"/v1/recordings/{served.record}/transcript",
            headers={"authorization": f"Bearer {served.owner_token}"},
            params={"format": "text"},
        ).text
    assert words.strip()
    page_text = d.find_element(By.TAG_NAME, "body").text
    assert words.strip()[:40] not in page_text


@scenario("In the browser, an owner's session is refused everywhere under /ops")
def test_owner_refused_under_ops(served: Served, browser: WebDriver) -> None:
    d = browser
    d.get(served.url + "/ops")
    css(d, "#signout").click()
    wait(d, lambda d: "/ops/signin" in d.current_url)
    d.get(served.url + "/signin")
    css(d, "#token").send_keys(served.owner_token)
    css(d, "#signin-submit").click()
    wait(d, lambda d: d.find_elements(By.ID, "upload-form"))
    for path in ("/ops", "/ops/stopped", f"/ops/records/{served.record}", "/ops/search?q=ann"):
        d.get(served.url + path)
        wait(d, lambda d: "/ops/signin" in d.current_url, message=path)
        status, text = fetch_text(d, path)
        assert status == 401, (path, status)
        assert str(served.record) not in text
