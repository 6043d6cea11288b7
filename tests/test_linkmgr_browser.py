"""The dashboard in a real browser: Debian's chromium, headless, driven by Selenium.

One screenshot per member state is kept (the folder is printed; FARLINK_SCREENSHOTS chooses
another), and each is checked pixel by pixel for its state's colour. The page must follow the log
as it grows, and a dashboard bound off loopback must refuse the browser without its token.
Skipped, with the reason, only where chromium, its driver or Selenium is missing (`make setup`
installs them).
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from farlink.linkmgr.view import STATE_COLORS
from linkmgr_support import T0, running_dashboard, states_log
from support import WALL_CLOCK

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # pragma: no cover - the dev extras install it
    webdriver = None

pytestmark = [
    WALL_CLOCK,
    pytest.mark.skipif(
        CHROMIUM is None or DRIVER is None or webdriver is None,
        reason="needs Debian's chromium and chromium-driver and selenium "
        "(make setup installs them)",
    ),
]

STATES = ("idle", "connecting", "connected", "dropped", "failed", "blocked")
NAMES = ["Kansas", "Nebraska", "Colorado", "Utah", "Iowa", "Texas"]  # seed 000 names them so
TOKEN = "browser-token"
WAIT_S = 30  # generous: a loaded machine; the waits end as soon as the page is right


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = os.environ.get("FARLINK_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("dashboard-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    print(f"\ndashboard screenshots in {path}")
    return path


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",  # the test suite runs as root in CI
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1200,1300",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    driver.set_page_load_timeout(WAIT_S)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def six_states(tmp_path_factory):
    path = tmp_path_factory.mktemp("states") / "states.sqlite"
    states_log(path, NAMES, STATES).close()
    with running_dashboard(path) as url:
        yield url


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))


def _card(driver, name: str):
    return driver.find_element(By.CSS_SELECTOR, f'.modem[data-name="{name}"]')


@pytest.mark.parametrize("state", STATES)
def test_each_state_shows_in_its_colour(browser, six_states, shots, state):
    import matplotlib.image

    browser.get(six_states)
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_element(By.ID, "live").text == "live")
    name = NAMES[STATES.index(state)]
    card = _card(browser, name)
    assert card.get_attribute("data-state") == state
    assert state in card.text.lower()
    png = card.screenshot_as_png
    (shots / f"state-{state}.png").write_bytes(png)
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
    # A point near the card's left edge, half-way down: background, no text.
    y, x = pixels.shape[0] // 2, 4
    seen = tuple(round(255 * c) for c in pixels[y, x, :3])
    want = _rgb(STATE_COLORS[state])
    assert max(abs(a - b) for a, b in zip(seen, want, strict=True)) <= 3, (seen, want)
    if state == "idle":
        browser.save_screenshot(str(shots / "dashboard.png"))


def test_a_snapshot_the_page_shows_leaves_its_elements_in_place(browser, six_states):
    # The stream's first snapshot repeats the one embedded in the page; redrawing it would
    # replace every element under the reader (and under a test holding one).
    browser.get(six_states)
    body = browser.find_element(By.TAG_NAME, "body")
    WebDriverWait(browser, WAIT_S).until(lambda d: body.get_attribute("data-snapshots") == "1")
    assert body.get_attribute("data-draws") == "1"
    assert _card(browser, "Colorado").get_attribute("data-state") == "connected"


def test_the_page_shows_the_bundle_figures(browser, six_states):
    browser.get(six_states)
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_element(By.ID, "live").text == "live")
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_elements(By.ID, "uptime-all"))
    assert "states.sqlite (air)" in browser.find_element(By.ID, "log").text
    assert browser.find_element(By.ID, "primary").text == "Colorado"
    assert browser.find_element(By.ID, "members-up").text == "1 / 6"
    assert "PRIMARY" in _card(browser, "Colorado").text
    assert "PRIMARY" not in _card(browser, "Kansas").text
    lit = _card(browser, "Texas").find_elements(By.CSS_SELECTOR, ".bars span.lit")
    assert len(lit) == 5  # the last member was given 5 bars
    assert browser.find_elements(By.CSS_SELECTOR, "#timeline-svg line.drop")
    assert browser.find_elements(By.CSS_SELECTOR, "#throughput-svg path.series-tx")


def test_the_page_follows_the_log_as_it_grows(browser, tmp_path, shots):
    writer = states_log(tmp_path / "grow.sqlite", NAMES[:2], ["connected", "connected"])
    with running_dashboard(tmp_path / "grow.sqlite") as url:
        browser.get(url)
        WebDriverWait(browser, WAIT_S).until(lambda d: d.find_element(By.ID, "live").text == "live")
        assert _card(browser, "Nebraska").get_attribute("data-state") == "connected"
        writer.event(T0 + 400, "drop", 1, detail="carrier lost")
        writer.event(T0 + 400, "state", 1, state="dropped")
        WebDriverWait(browser, WAIT_S).until(
            lambda d: _card(d, "Nebraska").get_attribute("data-state") == "dropped"
        )
        assert "1 drop," in _card(browser, "Nebraska").text
        browser.save_screenshot(str(shots / "live-after-drop.png"))
    writer.close()


def test_off_loopback_the_browser_is_refused_without_the_token(browser, tmp_path):
    states_log(tmp_path / "t.sqlite", NAMES[:2], ["connected", "failed"]).close()
    with running_dashboard(tmp_path / "t.sqlite", "0.0.0.0:0", TOKEN) as url:
        browser.get(url)
        assert "401" in browser.find_element(By.TAG_NAME, "body").text
        assert not browser.find_elements(By.CSS_SELECTOR, ".modem")
        browser.get(url + f"?token={TOKEN}")
        WebDriverWait(browser, WAIT_S).until(lambda d: d.find_element(By.ID, "live").text == "live")
        assert _card(browser, "Nebraska").get_attribute("data-state") == "failed"
