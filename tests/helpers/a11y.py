"""The browser's side of the accessibility tests (tests/integration/test_a11y_browser.py):
Chromium's emulated width and colour scheme, axe's blocking violations described, the
page's sign-in, and what the Tab key reaches."""

from __future__ import annotations

from typing import Any

from axe_selenium_python import Axe
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from tests.helpers.browser import css, wait

BLOCKING = ("serious", "critical")
"""The axe impacts a page may not have."""


def set_width(d: WebDriver, width: int | None) -> None:
    if width is None:
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    else:
        d.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 844, "deviceScaleFactor": 1, "mobile": True},
        )


def set_scheme(d: WebDriver, scheme: str) -> None:
    d.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
    )


def violations(d: WebDriver) -> list[dict[str, Any]]:
    """axe's serious and critical violations on the page as it is now."""
    axe = Axe(d)
    axe.inject()
    results = axe.run()
    return [v for v in results["violations"] if v["impact"] in BLOCKING]


def described(found: list[dict[str, Any]]) -> str:
    """Each violation: its rule, impact, the first nodes and what axe says of the first."""
    return "; ".join(
        f"{v['id']} ({v['impact']}): "
        + ", ".join(str(t) for n in v["nodes"][:4] for t in n["target"])
        + f" [{v['nodes'][0].get('failureSummary', '')}]"
        for v in found
    )


def sign_in(d: WebDriver, url: str, path: str, token: str, then: str) -> None:
    d.get(url + path)
    if d.find_elements(By.ID, "token"):
        css(d, "#token").send_keys(token)
        css(d, "#signin-submit").click()
    wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, then))


ACTIONS = "a[href], button, input:not([type=hidden]), select, textarea, summary, audio[controls]"


def tab_through(d: WebDriver, limit: int = 400) -> tuple[set[str], set[str]]:
    """Every action the page shows (visible, enabled), and those Tab reached from the
    top of the page (loaded again, so Tab starts there), each by a number the test gave
    it."""
    d.refresh()
    wait(d, lambda d: d.execute_script("return document.readyState") == "complete")
    shown = set(
        d.execute_script(
            "let n = 0; const shown = [];"
            "for (const el of document.querySelectorAll(arguments[0])) {"
            "  el.dataset.kbd = String(n++);"
            "  if (el.disabled || !el.checkVisibility({visibilityProperty: true})) continue;"
            "  shown.push(el.dataset.kbd); }"
            "return shown;",
            ACTIONS,
        )
    )
    order: list[str] = []
    for _ in range(limit):
        ActionChains(d).send_keys(Keys.TAB).perform()
        got = d.execute_script(
            "const a = document.activeElement;"
            "return !a || a === document.body ? null : (a.dataset.kbd || '-');"
        )
        if got is None and order:
            break  # past the last one: out of the page
        if got in (None, "-") or (order and got == order[-1]):
            # Not an action of the list (the waveform), or the player's own controls:
            # several stops on one element.
            continue
        if got in order:
            break  # round again
        order.append(got)
    return shown, set(order)


def unreached(d: WebDriver, shown: set[str], reached: set[str]) -> str:
    """What Tab did not reach, described for the failure's message."""
    return d.execute_script(
        "return arguments[0].map((k) => {"
        "  const el = document.querySelector(`[data-kbd='${k}']`);"
        "  return el ? el.outerHTML.slice(0, 120) : k; }).join('\\n');",
        sorted(shown - reached, key=int),
    )
