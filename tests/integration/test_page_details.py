"""The owner's page's small things over real HTTP on loopback, on a real PostgreSQL,
without a browser (tests/integration/test_a11y_browser.py drives them in Chromium):
downloads named after the title, the styled not-found page of an unknown address for a
browser (JSON still for an API client), the message after a deletion, no icon asked
for, and the script's counted texts in each plural form of the language."""

from __future__ import annotations

import re
import urllib.parse

import httpx
import pytest

from tests.helpers.api_clients import uploaded
from tests.helpers.pages import signed_in, transcribed_with_audio
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import i18n
from transcriber.http.downloads import attachment
from transcriber.owners import NewOwner

HTML = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("page", title)


def filenames(header: str) -> tuple[str, str]:
    """(filename, filename* decoded) of a Content-Disposition."""
    plain = re.search(r'filename="([^"]*)"', header)
    star = re.search(r"filename\*=UTF-8''(\S+)", header)
    assert plain and star, header
    return plain.group(1), urllib.parse.unquote(star.group(1))


@scenario("A download is named after the record's title")
async def test_downloads_are_named_after_the_title(
    db: Database, config: Config, as_ann: httpx.AsyncClient, base_url: str, ann: NewOwner
) -> None:
    rid = (await uploaded(as_ann, title="Планёрка: Q3 / итоги"))["id"]
    await transcribed_with_audio(db, config)
    async with signed_in(base_url, ann) as page:
        r = await page.get(f"/recordings/{rid}/transcript.srt")
        assert r.status_code == 200
        plain, full = filenames(r.headers["content-disposition"])
        assert full == "Планёрка_ Q3 _ итоги.srt"  # no path separator, no colon
        assert plain.isascii() and plain.endswith(".srt") and "/" not in plain
        assert re.fullmatch(r"[A-Za-z0-9._ -]+", plain), plain
        r = await page.get(f"/recordings/{rid}/transcript.txt?machine=true")
        assert filenames(r.headers["content-disposition"])[1] == "Планёрка_ Q3 _ итоги.machine.txt"
        # A Markdown download's head in the reader's language; the API's in English.
        page.cookies.set("transcriber_lang", "ru")
        md = (await page.get(f"/recordings/{rid}/transcript.md")).text
        assert "длительность 0:03" in md and "язык en" in md and "duration" not in md
    md = (await as_ann.get(f"/v1/recordings/{rid}/transcript.md")).text
    assert "duration 0:03" in md and "язык" not in md
    # A link's downloads are named as the owner's: after the title its page shows.
    link = (await as_ann.post(f"/v1/recordings/{rid}/shares", json={})).json()
    async with httpx.AsyncClient() as anyone:
        r = await anyone.get(link["url"] + "/transcript.vtt")
        assert r.status_code == 200
        assert filenames(r.headers["content-disposition"])[1] == "Планёрка_ Q3 _ итоги.vtt"
        anyone.cookies.set("transcriber_lang", "ru")
        md = (await anyone.get(link["url"] + "/transcript.md")).text
        assert "длительность" in md


def test_a_download_name_keeps_nothing_harmful() -> None:
    header = attachment('a"b\\c\r\nd\x00e' + "x" * 500, "ID", ".txt")
    assert "\r" not in header and "\n" not in header and "\x00" not in header
    plain, full = filenames(header)
    assert plain.startswith("a_b_c__d_ex") and len(full) <= i18n_len(120, ".txt")
    # Nothing of an all-Cyrillic title survives in ASCII: the record's id instead.
    assert filenames(attachment("Встреча", "0b5c", ".srt")) == ("0b5c.srt", "Встреча.srt")
    assert filenames(attachment("Crème brûlée", "x", ".md"))[0] == "Creme brulee.md"
    assert filenames(attachment("", "0b5c", ".md")) == ("0b5c.md", "0b5c.md")


def i18n_len(chars: int, suffix: str) -> int:
    return chars + len(suffix)


@scenario("A browser at an unknown address gets a styled not-found page; an API client JSON")
async def test_unknown_address_is_a_page_for_a_browser(base_url: str, ann: NewOwner) -> None:
    async with signed_in(base_url, ann) as page:
        for lang, words in (("en", "No such page"), ("ru", "Такой страницы нет")):
            page.cookies.set("transcriber_lang", lang)
            r = await page.get("/no/such/place", headers=HTML)
            assert r.status_code == 404
            assert r.headers["content-type"].startswith("text/html")
            assert words in r.text and 'id="languages"' in r.text
            assert 'id="signout"' in r.text  # signed in: the header as on every page
        # The page's script (no text/html) and a HEAD are answered as before.
        r = await page.get("/no/such/place")
        assert r.status_code == 401 and r.json() == {"error": "missing or invalid API token"}
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as stranger:
        r = await stranger.get("/nothing-here", headers=HTML)
        assert r.status_code == 404 and "No such page" in r.text
        assert 'id="signout"' not in r.text
        # An API client: JSON, as before; a known API route still wants its token.
        r = await stranger.get("/nothing-here", headers={"Accept": "application/json"})
        assert r.status_code == 401 and set(r.json()) == {"error"}
        r = await stranger.get("/v1/recordings", headers=HTML)
        assert r.status_code == 401 and set(r.json()) == {"error"}
        r = await stranger.get(
            "/nothing-here", headers={**HTML, "Authorization": f"Bearer {ann.token}"}
        )
        assert r.status_code == 404 and set(r.json()) == {"error"}


@scenario("After a deletion the list says how many recordings went")
async def test_the_list_says_how_many_were_deleted(
    as_ann: httpx.AsyncClient, base_url: str, ann: NewOwner
) -> None:
    ids = [(await uploaded(as_ann))["id"] for _ in range(3)]
    async with signed_in(base_url, ann) as page:
        page.cookies.set("transcriber_lang", "ru")
        r = await page.post(
            "/delete",
            data={"csrf": page.csrf, "id": ids[:2]},  # type: ignore[attr-defined]
        )
        assert r.status_code == 303 and r.headers["location"] == "/?deleted=2"
        listed = (await page.get(r.headers["location"])).text
        assert re.search(r'id="deleted-notice" role="status">Удалены 2 записи\.<', listed)
        r = await page.post(
            f"/recordings/{ids[2]}/delete",
            data={"csrf": page.csrf},  # type: ignore[attr-defined]
        )
        assert r.headers["location"] == "/?deleted=1"
        page.cookies.set("transcriber_lang", "en")
        listed = (await page.get("/?deleted=1")).text
        assert ">Deleted 1 recording.<" in listed
        assert "deleted-notice" not in (await page.get("/?deleted=x")).text
        assert "deleted-notice" not in (await page.get("/")).text


@scenario("No page makes the browser ask for an icon")
async def test_no_page_asks_for_an_icon(base_url: str, ann: NewOwner) -> None:
    async with signed_in(base_url, ann) as page:
        for path in ("/", "/signin", "/ops/signin", "/no/such/place"):
            text = (await page.get(path, headers=HTML)).text
            assert '<link rel="icon" href="data:,">' in text, path


def test_counted_script_texts_come_in_every_plural_form() -> None:
    ru = i18n.LANGS["ru"].script_words()["undone"]
    assert isinstance(ru, dict) and set(ru) >= {"one", "few", "many"}
    assert "1 фрагмент " in ru["one"].replace("{n}", "1")
    assert "2 фрагмента " in ru["few"].replace("{n}", "2")
    assert "5 фрагментов " in ru["many"].replace("{n}", "5")
    en = i18n.LANGS["en"].script_words()["undone"]
    assert isinstance(en, dict)
    assert en["one"] == "Undone: {n} segment back as it was."
    assert en["other"] == "Undone: {n} segments back as they were."
