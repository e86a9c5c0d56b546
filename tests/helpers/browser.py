"""What the browser tests share (tests/integration/test_*_browser.py): a real
`transcriber serve` as a process of its own on a loopback port, on a database of its
own cloned from the session's template, and Debian's headless Chromium driven by
Selenium through /usr/bin/chromedriver (so nothing is ever downloaded), with the page
helpers the tests read it by: waits that outlive a re-render, screenshots, a fetch made
by the page itself."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from tests.helpers.postgres import admin, run_with_loop, with_database

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
RECOGNITION_WAIT_S = 240.0
WAIT_S = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sql(db_url: str, statement: str) -> None:
    run_with_loop(admin, db_url, statement)


@contextlib.contextmanager
def service_database(pg_admin_url: str, template_db: str, prefix: str) -> Iterator[str]:
    """A database of its own for a served process, cloned from the migrated template;
    dropped on leaving (even while the process still holds it: FORCE)."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    sql(pg_admin_url, f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')
    try:
        yield with_database(pg_admin_url, name)
    finally:
        sql(pg_admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def service_env(db_url: str, home: Path, model_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment without its TRANSCRIBER_* but the database, home and
    model given (and `extra`, TRANSCRIBER_* names in full)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    env.update(
        TRANSCRIBER_DATABASE_URL=db_url,
        TRANSCRIBER_HOME=str(home),
        TRANSCRIBER_MODEL=str(model_dir),
        **extra,
    )
    return env


def cli_token(env: dict[str, str], *args: str) -> str:
    """`python -m transcriber ARGS` (`owner add`, `operator add`): the token it prints last."""
    done = subprocess.run(
        [sys.executable, "-m", "transcriber", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().split()[-1]


@attrs.define
class ServeProcess:
    """`transcriber serve --workers 1` on a fixed loopback port, so it can be stopped and
    started again at the same address (the browser's pages stay on one origin). Its
    output goes to `log`, appended over restarts."""

    env: dict[str, str]
    log: Path
    port: int = attrs.field(factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, **extra: str) -> None:
        """Starts it (with `extra` over its environment) and waits for /healthz."""
        with open(self.log, "ab") as out:  # the process holds its own copy
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "transcriber",
                    "serve",
                    "--http",
                    f"127.0.0.1:{self.port}",
                    "--workers",
                    "1",
                ],
                env={**self.env, **extra},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM, as systemd stops it; SIGKILL after 30 s."""
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def chromium(
    profile: Path,
    accept_language: str | None = None,
    window: str = "1200,900",
    microphone: Path | None = None,
    microphone_allowed: bool = True,
) -> WebDriver:
    """A headless Chromium with its own profile; `accept_language` is what it asks
    pages for (its `Accept-Language`), English when not given. With `microphone` (a
    16-bit PCM WAV) it has a fake microphone that plays that file over and over, given
    to any page without asking — or, not `microphone_allowed`, asked for as a browser
    asks (which a test answers with CDP's `Browser.setPermission`; the fake answer
    would give it even to a page whose permission is set to denied)."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--mute-audio",
        "--autoplay-policy=no-user-gesture-required",
        f"--window-size={window}",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    if microphone is not None:
        options.add_argument("--use-fake-device-for-media-stream")
        options.add_argument(f"--use-file-for-fake-audio-capture={microphone}")
        if microphone_allowed:
            options.add_argument("--use-fake-ui-for-media-stream")
    options.add_experimental_option(
        "prefs", {"intl.accept_languages": accept_language or "en-US,en"}
    )
    return webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))


@contextlib.contextmanager
def browser_session(
    profile: Path,
    accept_language: str | None = None,
    window: str = "1200,900",
    microphone: Path | None = None,
    microphone_allowed: bool = True,
) -> Iterator[WebDriver]:
    """`chromium(...)`, quit on leaving."""
    driver = chromium(profile, accept_language, window, microphone, microphone_allowed)
    try:
        yield driver
    finally:
        driver.quit()


# --- reading the page ------------------------------------------------------------------------


def wait(
    driver: WebDriver, what: Callable[[WebDriver], Any], timeout: float = WAIT_S, message: str = ""
) -> Any:
    # The page's script re-renders parts it updates (a saved correction, the live card):
    # an element found before may go stale while waiting; the next poll finds it again.
    return WebDriverWait(
        driver,
        timeout,
        poll_frequency=0.1,
        ignored_exceptions=(NoSuchElementException, StaleElementReferenceException),
    ).until(what, message)


def css(driver: WebDriver | WebElement, selector: str) -> WebElement:
    return driver.find_element(By.CSS_SELECTOR, selector)


def full_page(driver: WebDriver, path: Path) -> None:
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
        },
    )
    path.write_bytes(base64.b64decode(shot["data"]))


def screenshots(driver: WebDriver, out: Path, name: str) -> None:
    """The whole page, light and dark, and light on a phone-sized screen."""
    for scheme in ("light", "dark"):
        driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
        )
        full_page(driver, out / f"{name}-{scheme}.png")
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True},
    )
    full_page(driver, out / f"{name}-phone.png")
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def fetch_text(driver: WebDriver, path: str) -> tuple[int, str]:
    """`path` fetched by the page itself (its cookie, its origin)."""
    status, text = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {credentials: 'same-origin'})"
        ".then(r => r.text().then(t => done([r.status, t])));",
        path,
    )
    return status, text


# --- the owner's page's service (test_page_browser.py, test_speakers_browser.py) -------------


@attrs.define
class PageService:
    """The owner's page's service: its address and database, an owner's token, the
    output folder of screenshots and figures, and what the tests pass on to the next."""

    url: str
    db_url: str
    token: str
    out: Path
    figures: dict[str, Any] = attrs.field(factory=dict)
    record: str | None = None
    """The id of samples/en.ogg's record, once uploaded."""
    upload_started: float = 0.0


@contextlib.contextmanager
def page_service(
    pg_admin_url: str,
    template_db: str,
    model_dir: Path,
    out: Path,
    decoding: str = "sequential",
) -> Iterator[PageService]:
    """`transcriber serve` with one worker on its own database, and an owner's token."""
    with service_database(pg_admin_url, template_db, "t_page") as db_url:
        # Sequential decoding: a segment per sentence of samples/en.ogg (the batched
        # pipeline makes its 14 s of speech one segment), so playback can move between them.
        env = service_env(db_url, out / "home", model_dir, TRANSCRIBER_DECODING=decoding)
        token = cli_token(env, "owner", "add", "ann")
        serve = ServeProcess(env, out / "serve.log")
        serve.start()
        try:
            yield PageService(serve.url, db_url, token, out)
        finally:
            serve.stop()
