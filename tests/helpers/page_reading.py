"""Reading and working the owner's page in Chromium as a person would
(tests/integration/test_page_browser.py): the list's row of a record, the segment being
played, the segments' texts, the player's time, a key pressed where the focus is."""

from __future__ import annotations

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver


def row_of(driver: WebDriver, title: str) -> dict[str, str] | None:
    """The list's row of the record titled `title`: its state, text and link (read in
    one step: the live list may replace its rows at any moment)."""
    return driver.execute_script(
        "for (const tr of document.querySelectorAll('#list tbody tr')) {"
        "  const a = tr.querySelector('td a');"
        "  if (a && a.textContent === arguments[0])"
        "    return {state: tr.dataset.state, text: tr.innerText, href: a.getAttribute('href')};"
        "} return null;",
        title,
    )


def current_segment(driver: WebDriver) -> int | None:
    found = driver.find_elements(By.CSS_SELECTOR, ".segment.current")
    return int(found[0].get_attribute("data-index")) if found else None


def segment_texts(driver: WebDriver) -> list[tuple[str, bool]]:
    """Each segment's shown text (the recognizer's begins with a space, a correction is
    stored trimmed) and whether it is the owner's correction."""
    return [
        (t.strip(), c)
        for t, c in driver.execute_script(
            "return [...document.querySelectorAll('.segment')].map(li =>"
            " [li.querySelector('.text').textContent, li.classList.contains('corrected')])"
        )
    ]


def player_time(driver: WebDriver) -> float:
    return float(driver.execute_script("return document.getElementById('player').currentTime"))


def paused(driver: WebDriver) -> bool:
    return bool(driver.execute_script("return document.getElementById('player').paused"))


def press(driver: WebDriver, key: str, alt: bool = False) -> None:
    """A key pressed where the focus is, as a person presses it."""
    chain = ActionChains(driver)
    if alt:
        chain.key_down(Keys.ALT).send_keys(key).key_up(Keys.ALT)
    else:
        chain.send_keys(key)
    chain.perform()
