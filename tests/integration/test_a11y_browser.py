"""Accessibility by test: axe-core (the copy `axe-selenium-python` ships, injected into
the page; nothing fetched) run in a real headless Chromium over every page of the
owner, the share-link holder and the operator, in English and Russian, on a desktop
and on a 390 px phone, against a real `transcriber serve` with real recognition; the
keyboard alone reaching every action of the list and the record page; and, on the same
service, the share holder's player and the upload form's options per file.

No page may have a serious or critical violation. Each run's counts (serious+critical
per page) go to the module's output folder as axe-counts.json, printed at the start,
with whole-page screenshots of the list, a record page, a stop and a share page; they
are never committed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import httpx
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from tests.helpers.a11y import (
    described,
    set_scheme,
    set_width,
    sign_in,
    tab_through,
    unreached,
    violations,
)
from tests.helpers.browser import (
    RECOGNITION_WAIT_S,
    ROOT,
    ServeProcess,
    browser_session,
    cli_token,
    css,
    full_page,
    service_database,
    service_env,
    sql,
    wait,
)
from transcriber.languages import NAMES

SHOT = (
    "owner list",
    "owner record",
    "owner stopped record",
    "share holder",
    "share refused",
    "operator glance",
)
"""The pages whose whole-page screenshots (light) go to the output folder."""
LANGUAGES = ("en", "ru")
WIDTHS = {"desktop": None, "phone": 390}


@attrs.define
class Served:
    serve: ServeProcess
    owner_token: str
    operator_token: str
    out: Path
    record: str = ""
    stopped: str = ""
    share_url: str = ""
    counts: dict[str, int] = attrs.field(factory=dict)
    found: dict[str, str] = attrs.field(factory=dict)

    @property
    def url(self) -> str:
        return self.serve.url


def api_upload(served: Served, name: str, body: bytes, mime: str) -> str:
    with httpx.Client(base_url=served.url, timeout=60) as api:
        r = api.post(
            "/v1/recordings",
            headers={"authorization": f"Bearer {served.owner_token}"},
            files={"file": (name, body, mime)},
        )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def wait_for(served: Served, rid: str, done: tuple[str, ...]) -> None:
    """Until the record's card is at one of `done` (a milestone, or "stopped")."""
    deadline = time.monotonic() + RECOGNITION_WAIT_S
    while True:
        card = httpx.get(
            f"{served.url}/v1/recordings/{rid}",
            headers={"authorization": f"Bearer {served.owner_token}"},
        ).json()
        if card.get("milestone") in done or (card.get("stopped") and "stopped" in done):
            return
        assert time.monotonic() < deadline, card
        time.sleep(0.5)


@pytest.fixture(scope="module")
def served(
    pg_admin_url: str, template_db: str, model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    out = tmp_path_factory.mktemp("a11y-browser")
    print(f"\naccessibility counts: {out}/axe-counts.json")
    with service_database(pg_admin_url, template_db, "t_a11y") as db_url:
        env = service_env(db_url, out / "home", model_dir, TRANSCRIBER_DECODING="sequential")
        owner_token = cli_token(env, "owner", "add", "ann")
        operator_token = cli_token(env, "operator", "add", "olga")
        served = Served(ServeProcess(env, out / "serve.log"), owner_token, operator_token, out)
        served.serve.start()
        try:
            audio = (ROOT / "samples" / "en.ogg").read_bytes()
            served.record = api_upload(served, "en.ogg", audio, "audio/ogg")
            served.stopped = api_upload(served, "notes.ogg", b"not audio at all" * 64, "audio/ogg")
            wait_for(served, served.record, ("transcribed",))
            wait_for(served, served.stopped, ("stopped",))
            r = httpx.post(
                f"{served.url}/v1/recordings/{served.record}/shares",
                headers={"authorization": f"Bearer {served.owner_token}"},
                json={"note": "for the team"},
            )
            assert r.status_code == 201, r.text
            served.share_url = r.json()["url"]
            yield served
            (out / "axe-counts.json").write_text(json.dumps(served.counts, indent=2))
            (out / "axe-found.json").write_text(json.dumps(served.found, indent=2))
            print(f"\naxe counts (serious+critical per page): {json.dumps(served.counts)}")
        finally:
            served.serve.stop()


@pytest.fixture(scope="module")
def browser(served: Served) -> Iterator[WebDriver]:
    with browser_session(served.out / "chromium-profile", window="1280,900") as driver:
        yield driver


def pages(served: Served) -> list[tuple[str, str, str]]:
    """(name, path, a selector the page has once shown), in the order visited: each
    face's sign-in first, while signed out."""
    rid, stopped = served.record, served.stopped
    share = served.share_url.split("://", 1)[1].split("/", 1)[1]
    return [
        ("owner sign-in", "/signin", "#token"),
        ("owner list", "/", "#list table"),
        ("owner record", f"/recordings/{rid}", ".segment"),
        ("owner stopped record", f"/recordings/{stopped}", "main h1"),
        ("owner print", f"/recordings/{rid}/print", "#print-title"),
        ("owner unknown address", "/no/such/page", "main h1"),
        ("owner microphone", "/microphone", "#record-start"),
        ("owner settings", "/settings", "#settings-form"),
        ("owner voices", "/voices", "#voices-title"),
        ("share holder", "/" + share, "main"),
        ("share refused", "/s/" + "x" * 43, "#share-gone"),
        ("operator sign-in", "/ops/signin", "#token"),
        ("operator glance", "/ops", "#milestones"),
        ("operator stopped", "/ops/stopped", "main table"),
        ("operator record", f"/ops/records/{rid}", "main h1"),
    ]


@pytest.mark.scenario(
    "page", "Every page has no serious or critical accessibility violation, in each language"
)
@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("lang", LANGUAGES)
def test_axe_finds_nothing_serious(
    served: Served, browser: WebDriver, lang: str, width: str
) -> None:
    d = browser
    if d.current_url.startswith(served.url):
        d.delete_all_cookies()
    d.get(f"{served.url}/lang/{lang}?next=/signin")
    set_width(d, WIDTHS[width])
    failures: list[str] = []
    try:
        for name, path, ready in pages(served):
            if name == "owner list":
                sign_in(d, served.url, "/", served.owner_token, ready)
            elif name == "share holder":
                # A stranger's browser: no owner's session.
                d.delete_all_cookies()
                d.get(f"{served.url}/lang/{lang}?next=/{path.lstrip('/')}")
                wait(d, lambda d, ready=ready: d.find_elements(By.CSS_SELECTOR, ready))
            elif name == "operator glance":
                sign_in(d, served.url, "/ops", served.operator_token, ready)
            else:
                d.get(served.url + path)
                wait(d, lambda d, ready=ready: d.find_elements(By.CSS_SELECTOR, ready))
            assert d.execute_script("return document.documentElement.lang") == lang, name
            for scheme in ("light", "dark"):
                set_scheme(d, scheme)
                found = violations(d)
                served.counts[f"{lang} {width} {scheme}: {name}"] = sum(
                    len(v["nodes"]) for v in found
                )
                if found:
                    served.found[f"{lang} {width} {scheme}: {name}"] = described(found)
                    failures.append(f"{name} ({scheme}): {described(found)}")
            d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
            if name in SHOT:
                # From the top: axe scrolls, and the sticky player would be shot midway.
                d.execute_script("window.scrollTo(0, 0)")
                full_page(d, served.out / f"{name.replace(' ', '-')}-{lang}-{width}.png")
    finally:
        set_width(d, None)
    assert not failures, "\n".join(failures)


# --- the list's small things, in the browser (after the axe runs: one deletes) -------------


def on_list(served: Served, d: WebDriver, lang: str, width: int | None = None) -> None:
    d.get(f"{served.url}/lang/{lang}?next=/")
    set_width(d, width)
    sign_in(d, served.url, "/", served.owner_token, "#list table")


@pytest.mark.scenario("page", "The list's header and labels read whole on a desktop and a phone")
def test_headers_and_labels_read_whole(served: Served, browser: WebDriver) -> None:
    d = browser
    for lang in LANGUAGES:
        on_list(served, d, lang)
        # Each header on one line, none broken inside a word ("Длительность"), down to
        # the narrowest width before the phone's stacked rows.
        set_width(d, 660)
        lines = d.execute_script(
            "return Array.from(document.querySelectorAll('#list thead th:not(:first-child)'),"
            " (th) => {"
            "  const r = document.createRange(); r.selectNodeContents(th);"
            "  return [th.textContent.trim(), new Set(Array.from(r.getClientRects(),"
            "    (q) => Math.round(q.top))).size]; });"
        )
        assert lines and all(n <= 1 for _, n in lines), lines
        set_width(d, 390)
        try:
            # On a phone each cell says what it is, but the checkbox's: no stray ":".
            before = d.execute_script(
                "return Array.from(document.querySelectorAll('#list tbody td'),"
                " (td) => getComputedStyle(td, '::before').content);"
            )
            assert before and not any(c.strip('"') in (": ", ":") for c in before), before
            assert any(c.startswith('"') and c.endswith(': "') for c in before), before
        finally:
            set_width(d, None)


@pytest.mark.scenario(
    "page",
    "Delete selected needs a selection, select-all picks every row, the list says what went",
)
def test_select_all_and_delete_selected(served: Served, browser: WebDriver) -> None:
    d = browser
    on_list(served, d, "en")
    button = css(d, "#delete-selected-button")
    help_text = css(d, "#delete-selected-help")
    # Nothing selected: the button cannot be pressed, and the page says why.
    assert not button.is_enabled()
    assert help_text.is_displayed() and help_text.text == "Select recordings first."
    boxes = d.find_elements(By.CSS_SELECTOR, '#list input[name="id"]')
    assert len(boxes) == 2
    css(d, "#select-all").click()
    assert all(b.is_selected() for b in boxes) and button.is_enabled()
    assert not help_text.is_displayed()
    css(d, "#select-all").click()
    assert not any(b.is_selected() for b in boxes) and not button.is_enabled()
    # One row by itself: select-all shows "some" (indeterminate), the button works.
    css(d, f"#select-{served.stopped}").click()
    assert d.execute_script("return document.getElementById('select-all').indeterminate")
    assert button.is_enabled()
    button.click()
    d.switch_to.alert.accept()
    notice = wait(d, lambda d: css(d, "#deleted-notice"))
    assert notice.text == "Deleted 1 recording." and notice.get_attribute("role") == "status"
    assert len(d.find_elements(By.CSS_SELECTOR, '#list input[name="id"]')) == 1


@pytest.mark.scenario("page", "A counted message on the page is in the right plural form")
def test_counted_messages_in_the_right_plural(served: Served, browser: WebDriver) -> None:
    d = browser
    said = {}
    for lang in LANGUAGES:
        on_list(served, d, lang)
        said[lang] = d.execute_script(
            "return [1, 2, 5, 21].map((n) => window.transcriber.t('undone', {n}));"
        )
    assert said["en"][0] == "Undone: 1 segment back as it was."
    assert said["en"][1] == "Undone: 2 segments back as they were."
    ru = said["ru"]
    assert "1 фрагмент " in ru[0] and "2 фрагмента " in ru[1]
    assert "5 фрагментов " in ru[2] and "21 фрагмент " in ru[3]


# --- the keyboard alone ----------------------------------------------------------------------


@pytest.mark.scenario(
    "page", "Keyboard alone reaches and works every action of the list and a record"
)
def test_keyboard_alone(served: Served, browser: WebDriver) -> None:
    d = browser
    on_list(served, d, "en")
    shown, reached = tab_through(d)
    assert shown and shown <= reached, unreached(d, shown, reached)
    # Space checks a row's box, and "Select all"; Enter follows a record's link.
    box = css(d, f"#select-{served.record}")
    box_id = box.get_attribute("id")
    d.execute_script("arguments[0].focus()", box)
    ActionChains(d).send_keys(Keys.SPACE).perform()
    assert css(d, f"#{box_id}").is_selected() and css(d, "#delete-selected-button").is_enabled()
    ActionChains(d).send_keys(Keys.SPACE).perform()
    assert not css(d, f"#{box_id}").is_selected()
    link = css(d, f'#list a[href="/recordings/{served.record}"]')
    d.execute_script("arguments[0].focus()", link)
    ActionChains(d).send_keys(Keys.ENTER).perform()
    wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, ".segment .seek"))

    shown, reached = tab_through(d)
    assert shown and shown <= reached, unreached(d, shown, reached)
    # Enter opens the folded editor of the owner's fields; Space on a segment's time
    # seeks the player there; Enter on "Correct" opens the correction, Escape closes it.
    summary = css(d, "#edit-details summary")
    d.execute_script("arguments[0].focus()", summary)
    ActionChains(d).send_keys(Keys.ENTER).perform()
    assert css(d, "#edit-details").get_attribute("open") is not None
    assert css(d, "#edit-title").is_displayed()
    segments = d.find_elements(By.CSS_SELECTOR, ".segment")
    last = segments[-1]
    d.execute_script("arguments[0].focus()", last.find_element(By.CSS_SELECTOR, ".seek"))
    ActionChains(d).send_keys(Keys.SPACE).perform()
    start = float(last.get_attribute("data-start"))
    wait(
        d,
        lambda d: (
            abs(d.execute_script("return document.getElementById('player').currentTime") - start)
            < 0.5
        ),
        message="Space on a segment's time did not seek",
    )
    d.execute_script("document.getElementById('player').pause()")
    d.execute_script("arguments[0].focus()", segments[0].find_element(By.CSS_SELECTOR, ".fix"))
    ActionChains(d).send_keys(Keys.ENTER).perform()
    area = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, ".segment form.correction textarea"))
    assert d.switch_to.active_element == area[0]
    ActionChains(d).send_keys(Keys.ESCAPE).perform()
    assert not d.find_elements(By.CSS_SELECTOR, "form.correction")

    # A stop another language may cure (the list's test deleted the first stop): its
    # "Transcribe again with…" is reached and sent by the keyboard alone.
    stop = api_upload(served, "notes-2.ogg", b"not audio either" * 64, "audio/ogg")
    wait_for(served, stop, ("stopped",))
    sql(
        served.serve.env["TRANSCRIBER_DATABASE_URL"],
        "UPDATE recordings SET milestone = 'normalized', stop_reason = 'attempts_exhausted'"
        f" WHERE id = '{stop}'",
    )
    d.get(f"{served.url}/recordings/{stop}")
    wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#again-form"))
    for lang, width in (("en", None), ("en", 390), ("ru", None), ("ru", 390)):
        d.get(f"{served.url}/lang/{lang}?next=/recordings/{stop}")
        set_width(d, width)
        wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#again-form"))
        full_page(d, served.out / f"stop-again-{lang}-{'phone' if width else 'desktop'}.png")
    set_width(d, None)
    d.get(f"{served.url}/lang/en?next=/recordings/{stop}")
    wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#again-form"))
    shown, reached = tab_through(d)
    assert shown and shown <= reached, unreached(d, shown, reached)
    language = css(d, "#again-language")
    d.execute_script("arguments[0].focus()", language)
    language.send_keys("de")
    d.execute_script("arguments[0].focus()", css(d, "#again-submit"))
    ActionChains(d).send_keys(Keys.ENTER).perform()
    wait(d, lambda d: d.current_url.rstrip("/") != f"{served.url}/recordings/{stop}")
    assert d.find_elements(By.ID, "status") and not d.find_elements(By.ID, "again-error")


# --- edits in place -------------------------------------------------------------------------


@pytest.mark.scenario("page", "Edits on the record page are put in place, without a reload")
def test_edits_in_place(served: Served, browser: WebDriver) -> None:
    d = browser
    on_list(served, d, "en")
    d.get(f"{served.url}/recordings/{served.record}")
    wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, ".segment"))
    d.execute_script(
        "window.notReloaded = true; document.getElementById('player').currentTime = 4;"
    )
    # The title: saved, shown in the heading, the editor still open, said.
    css(d, "#edit-details summary").click()
    title = css(d, "#edit-title")
    title.clear()
    title.send_keys("Weekly sync")
    css(d, "#edit-save").click()
    wait(d, lambda d: css(d, "#record-title").text == "Weekly sync")
    wait(d, lambda d: css(d, "#in-place-status").get_attribute("textContent") == "Saved.")
    assert css(d, "#edit-details").get_attribute("open") is not None
    # Refused: the reason next to the field, nothing saved.
    title = css(d, "#edit-title")
    title.clear()
    title.send_keys("x" * 600)
    css(d, "#edit-save").click()
    wait(d, lambda d: d.find_elements(By.ID, "edit-title-error"))
    assert css(d, "#record-title").text == "Weekly sync"
    # A share link made, copied, revoked after confirming: all in place.
    css(d, "#shares summary").click()
    css(d, "#share-note").send_keys("for the team too")
    css(d, "#share-make").click()
    wait(d, lambda d: d.find_elements(By.ID, "new-share"))
    assert css(d, "#new-share-copy").is_displayed()
    revoke = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#share-list li button.revoke"))
    revoke[-1].click()
    d.switch_to.alert.accept()
    wait(
        d,
        lambda d: (
            len(d.find_elements(By.CSS_SELECTOR, "#share-list li button.revoke")) == len(revoke) - 1
        ),
    )
    assert d.execute_script("return window.notReloaded === true")
    assert abs(d.execute_script("return document.getElementById('player').currentTime") - 4) < 0.5


# --- the share holder's player -----------------------------------------------------------


@pytest.mark.scenario("sharing", "The shared view plays and seeks like the owner's page, read-only")
def test_shared_view_plays_and_seeks(served: Served, browser: WebDriver) -> None:
    d = browser
    d.delete_all_cookies()
    d.get(f"{served.url}/lang/en?next=/signin")
    d.get(served.share_url)
    segments = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, ".segment"))
    assert len(segments) >= 2 and not d.find_elements(By.CSS_SELECTOR, "form, .fix")
    wait(d, lambda d: d.execute_script("return document.getElementById('player').readyState") >= 1)
    # A segment's time seeks the player there and highlights it.
    last = segments[-1]
    start = float(last.get_attribute("data-start"))
    last.find_element(By.CSS_SELECTOR, ".seek").click()
    wait(
        d,
        lambda d: (
            abs(d.execute_script("return document.getElementById('player').currentTime") - start)
            < 0.5
            and "current" in (css(d, f"#{last.get_attribute('id')}").get_attribute("class") or "")
        ),
        message="the shared view did not seek",
    )
    # Played, the word being said is highlighted within its segment.
    d.execute_script(
        "const p = document.getElementById('player'); p.pause();"
        "p.playbackRate = 2; p.currentTime = 0; p.play();"
    )
    wait(
        d,
        lambda d: d.execute_script("return !!document.querySelector('.segment .word.current')"),
        message="no word highlighted on the shared view",
    )
    d.execute_script("document.getElementById('player').pause()")
    # The keyboard shortcuts play and skip; nothing opens for correcting.
    ActionChains(d).send_keys("e").perform()
    assert not d.find_elements(By.CSS_SELECTOR, "form.correction")


@pytest.mark.scenario("sharing", "A refused link's page is styled, with the language switch")
def test_refused_link_is_styled(served: Served, browser: WebDriver) -> None:
    d = browser
    d.delete_all_cookies()
    d.get(f"{served.url}/lang/en?next=/s/{'x' * 43}")
    assert css(d, "#share-gone").text == "This link is not valid"
    # The page's stylesheet: the header and the card, as on every page.
    assert (
        d.execute_script(
            "return getComputedStyle(document.querySelector('.top')).borderBottomStyle"
        )
        == "solid"
    )
    assert (
        d.execute_script("return getComputedStyle(document.querySelector('.card')).borderTopStyle")
        == "solid"
    )
    css(d, "#lang-ru").click()
    wait(d, lambda d: css(d, "#share-gone").text == "Эта ссылка недействительна")
    assert not d.find_elements(By.CSS_SELECTOR, 'a[href="/"]')


# --- the upload form's options per file (last: it adds records) -----------------------------


@pytest.mark.scenario(
    "page", "Each file of a batch has its own language and speakers, the batch's by default"
)
def test_options_per_file(served: Served, browser: WebDriver) -> None:
    d = browser
    on_list(served, d, "ru")
    # The language chooser: "detect" first, then the page's own language, named in it.
    offered = d.execute_script(
        "return Array.from(document.querySelectorAll('#language-codes option'),"
        " (o) => [o.value, o.textContent.trim()]);"
    )
    assert offered[0] == ["auto", "определить язык"] and offered[1] == ["ru", "русский"]
    assert ["de", "немецкий"] in offered and len(offered) == 1 + len(NAMES)

    def ids() -> list[str]:
        with httpx.Client(base_url=served.url, timeout=30) as api:
            listed = api.get(
                "/v1/recordings?limit=100",
                headers={"authorization": f"Bearer {served.owner_token}"},
            )
        return [c["id"] for c in listed.json()["items"]]

    before = ids()
    first, second = served.out / "first.wav", served.out / "second.wav"
    first.write_bytes(b"not audio, the first")
    second.write_bytes(b"not audio, the second")
    css(d, "#files").send_keys(f"{first}\n{second}")
    css(d, "#language").send_keys("английский")
    css(d, "#speakers").send_keys("2")
    assert css(d, "#language-1").get_attribute("placeholder") == "английский"
    assert css(d, "#speakers-1").get_attribute("placeholder") == "2"
    # A file's own speakers the service does not take: said in its row, nothing sent.
    css(d, "#speakers-0").send_keys("lots")
    css(d, "#upload-start").click()
    said = wait(d, lambda d: (m := css(d, "#queue li:nth-child(1) .msg")).is_displayed() and m.text)
    assert "«lots» — не число говорящих" in said and ids() == before
    css(d, "#speakers-0").clear()
    # A file's own language no recognizer knows: said in its row, nothing sent.
    css(d, "#language-1").send_keys("xx")
    css(d, "#upload-start").click()
    said = wait(d, lambda d: (m := css(d, "#queue li:nth-child(2) .msg")).is_displayed() and m.text)
    assert "не знает языка «xx»" in said and ids() == before
    assert css(d, "#queue li:nth-child(1) .msg").text == ""  # its speakers are right now
    full_page(d, served.out / "upload-per-file-ru-desktop.png")
    css(d, "#language-1").clear()
    css(d, "#language-1").send_keys("Немецкий")
    css(d, "#speakers-1").send_keys("off")
    css(d, "#upload-start").click()
    wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#queue .msg a")) == 2)
    # Sent, a file's fields change nothing more: they say so.
    assert not any(
        i.is_enabled() for i in d.find_elements(By.CSS_SELECTOR, "#queue .per-file input")
    )
    made = [i for i in ids() if i not in before]
    with httpx.Client(base_url=served.url, timeout=30) as api:
        cards = [
            api.get(
                f"/v1/recordings/{i}", headers={"authorization": f"Bearer {served.owner_token}"}
            ).json()
            for i in made
        ]
    got = {c["filename"]: (c["language"], c["speakers"]["asked"]) for c in cards}
    assert got == {"first.wav": ("en", "2"), "second.wav": ("de", "off")}
