"""The live page in a real browser: Debian's chromium, headless, driven by selenium through
chromium-driver (no browser download). `twin serve` runs in its own process on 127.0.0.1.

The browser may resolve no name but 127.0.0.1 (`--host-resolver-rules`), so the page is shown
to load offline; screenshots go to `.artifacts/live/` (git-ignored)."""
import io
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import zxingcpp
from PIL import Image

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / ".artifacts" / "live"
sys.path.insert(0, str(ROOT / "bench"))
from bench_live import free_port  # noqa: E402  (one copy, shared with the bench)

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
if CHROMIUM is None or DRIVER is None:
    pytest.fail("chromium and chromium-driver are needed (scripts/install-test-deps.sh installs them)",
                pytrace=False)
from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def post(base: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as err:
        return json.loads(err.read())


def on_off(base: str, device: str) -> bool:
    answer = post(base, "/tools/get_attribute", {"device.id": device, "endpoint.id": 1, "cluster.id": "OnOff",
                                                 "attribute.id": "OnOff"})
    return answer["value"]


@pytest.fixture(scope="module")
def twin():
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "matter_twin.cli", "serve", "--port", str(port), "--speed", "1"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(base + "/health", timeout=1)
            break
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "twin serve did not start"
            time.sleep(0.1)
    yield base
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser(twin):
    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.get(twin + "/")
    yield driver
    driver.quit()


def shows_on(driver, device: str) -> bool:
    """Whether the page shows the device's toggle on (one script: cards are redrawn as changes come)."""
    return driver.execute_script(
        "const b = document.querySelector(`.device[data-device='${arguments[0]}'] .toggle`);"
        "return !!b && b.classList.contains('on')", device)


def wait(driver, condition, timeout=5.0):
    # The page redraws its cards and tables as changes arrive, so an element found in one poll may be
    # gone by the next read: that is "not yet", not a failure.
    return WebDriverWait(driver, timeout, poll_frequency=0.02,
                         ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
                         ).until(lambda d: condition(d))


def test_page_loads_offline_and_shows_every_room(twin, browser):
    with urllib.request.urlopen(twin + "/live/home") as response:
        rooms = [r["id"] for r in json.loads(response.read())["rooms"]]
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".room")) == len(rooms))
    shown = [e.get_attribute("data-room") for e in browser.find_elements(By.CSS_SELECTOR, ".room")]
    assert shown == rooms
    # Every resource came from the twin itself (nothing else even resolves).
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources and all(r.startswith(twin) for r in resources), resources
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    time.sleep(2.5)   # a few samples for the history charts
    browser.save_screenshot(str(ARTIFACTS / "home.png"))


def test_a_click_toggles_a_light_in_the_twin(twin, browser):
    assert on_off(twin, "kitchen_light") is False
    button = wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, '.device[data-device="kitchen_light"] .toggle'))
    button.click()
    deadline = time.monotonic() + 5
    while not on_off(twin, "kitchen_light"):
        assert time.monotonic() < deadline, "the click did not turn the light on"
        time.sleep(0.05)
    wait(browser, lambda d: shows_on(d, "kitchen_light"))


def test_a_tool_api_change_shows_within_a_second(twin, browser):
    assert not shows_on(browser, "bedroom_light")
    started = time.monotonic()
    assert post(twin, "/tools/execute_command", {"device.id": "bedroom_light", "endpoint.id": 1, "cluster.id": "OnOff",
                                                 "command.id": "On", "args": {}})["ok"]
    wait(browser, lambda d: shows_on(d, "bedroom_light"), timeout=1.0)
    assert time.monotonic() - started < 1.0
    browser.save_screenshot(str(ARTIFACTS / "after-changes.png"))


def test_a_tool_error_is_shown_and_changes_nothing(twin, browser):
    # The AC is off: its fan speed is refused by the same rule the tools apply.
    browser.execute_script("const s = document.querySelector(`.device[data-device='bedroom_ac'] input[type=range]`);"
                           "s.value = 60; s.dispatchEvent(new Event('change'))")
    toast = wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".toast.error"))
    assert "INVALID_IN_STATE" in toast.text
    answer = post(twin, "/tools/get_attribute", {"device.id": "bedroom_ac", "endpoint.id": 1,
                                                 "cluster.id": "FanControl", "attribute.id": "PercentSetting"})
    assert answer["value"] == 0


def test_the_qr_image_decodes_to_the_nodes_payload(twin, browser):
    browser.find_element(By.CSS_SELECTOR, 'nav .tab[data-tab="pairing"]').click()
    image = wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, '.code-card[data-device="kitchen_light"] img.qr'))
    wait(browser, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", image))
    payload = browser.find_element(By.CSS_SELECTOR, '.code-card[data-device="kitchen_light"] .payload').text
    assert payload.startswith("MT:")
    decoded = zxingcpp.read_barcodes(Image.open(io.BytesIO(image.screenshot_as_png)))
    assert [d.text for d in decoded] == [payload]
    browser.save_screenshot(str(ARTIFACTS / "pairing.png"))


def test_the_clock_pauses_and_fast_forwards(twin, browser):
    browser.find_element(By.CSS_SELECTOR, 'nav .tab[data-tab="home"]').click()
    browser.find_element(By.ID, "pause").click()
    wait(browser, lambda d: d.execute_script("return document.getElementById('clock-pace').textContent") == "paused")
    tick = lambda: int(browser.execute_script("return document.getElementById('clock-tick').textContent")  # noqa: E731
                       .split()[1])
    before = tick()
    time.sleep(0.5)
    assert tick() == before
    span = browser.find_element(By.ID, "ff-span")
    span.clear()
    span.send_keys("1h")
    browser.find_element(By.CSS_SELECTOR, "#ff button").click()
    wait(browser, lambda d: tick() >= before + 36000)
    browser.find_element(By.ID, "pause").click()
    wait(browser, lambda d: "real time" in d.execute_script("return document.getElementById('clock-pace').textContent"))


def test_edit_mode_checks_the_home_file(twin, browser):
    browser.find_element(By.CSS_SELECTOR, 'nav .tab[data-tab="edit"]').click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".edit-room"))
    name = browser.find_element(By.CSS_SELECTOR, "form.save input[name=path]")
    name.clear()                                  # no file name: validate only, write nothing
    browser.find_element(By.CSS_SELECTOR, "form.save button[type=submit]").click()
    wait(browser, lambda d: "default-home" in d.execute_script("return document.getElementById('yaml').textContent")
         or "name:" in d.execute_script("return document.getElementById('yaml').textContent"))
    browser.save_screenshot(str(ARTIFACTS / "edit.png"))


def test_a_lab_session_shows_its_calls_on_the_page(browser, tmp_path):
    """`twin lab run --http` (a twin-only session: no hardware here): the page gets a Lab
    session tab whose call log fills from the stream: the script's calls and the page's own
    clicks, which go through the session. Real vs twin rows: tests/app/test_live_lab.py."""
    port = free_port()
    lab_file = tmp_path / "lab.yaml"
    lab_file.write_text(json.dumps({"name": "page", "controller": {"url": "ws://127.0.0.1:5580/ws"}, "session": {
        "sample_interval": 0.5, "script": [{"wait": 10}, {"tool": "execute_command", "args": {
            "device.id": "kitchen_light", "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "Toggle",
            "args": {}}}, {"wait": 30}]}}))
    proc = subprocess.Popen([sys.executable, "-m", "matter_twin.cli", "lab", "run", str(lab_file), "--http", str(port)],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(base + "/live/lab", timeout=1)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "twin lab run --http did not start"
                time.sleep(0.1)
        browser.get(base + "/")
        tab = wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, 'nav .tab[data-tab="lab"]'))
        wait(browser, lambda d: tab.is_displayed())
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '.device[data-device="living_room_light"] .toggle'))
        browser.find_element(By.CSS_SELECTOR, '.device[data-device="living_room_light"] .toggle').click()
        tab.click()
        rows = lambda d: [r.text for r in d.find_elements(By.CSS_SELECTOR, "#lab-calls tr")[1:]]  # noqa: E731
        wait(browser, lambda d: any("page" in r and "living_room_light" in r for r in rows(d)))
        # The page lists calls made since it opened: the script waits 10 s so that a slow browser start
        # (a loaded CI machine) still opens the page before the script's call.
        wait(browser, lambda d: any("script" in r and "kitchen_light" in r for r in rows(d)), timeout=30)
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and base in e["message"]]
        assert not errors, errors
        browser.save_screenshot(str(ARTIFACTS / "lab.png"))
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_phone_screen_has_no_horizontal_overflow_and_every_tab_reachable(twin):
    """390x844 (a phone): the page is never wider than the screen, on every tab, and every tab
    can be reached and shows its panel."""
    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    options.add_experimental_option("mobileEmulation", {"deviceMetrics": {"width": 390, "height": 844,
                                                                          "pixelRatio": 3.0}})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        driver.get(twin + "/")
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ".room .device"), timeout=15)
        assert driver.execute_script("return window.innerWidth") == 390
        tabs = [t for t in driver.find_elements(By.CSS_SELECTOR, "nav .tab") if t.is_displayed()]
        assert [t.get_attribute("data-tab") for t in tabs] == ["home", "pairing", "workflows", "runs", "edit"]
        for tab in tabs:
            name = tab.get_attribute("data-tab")
            rect = driver.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.left, r.right]",
                                         tab)
            assert 0 <= rect[0] and rect[1] <= 390, f"tab {name} at {rect}: off the screen"
            tab.click()
            panel = driver.find_element(By.ID, f"tab-{name}")
            wait(driver, lambda d, panel=panel: panel.is_displayed())
            time.sleep(0.5)   # the panel's content (codes, runs, editor) is drawn
            width = driver.execute_script("return document.documentElement.scrollWidth")
            driver.save_screenshot(str(ARTIFACTS / f"phone-{name}.png"))
            wider = driver.execute_script(
                "return [...document.querySelectorAll('body *')].filter(e => e.offsetParent !== null"
                " && e.getBoundingClientRect().right > window.innerWidth + 0.5"
                " && !e.closest('#workflows, #runs, #run, #lab, .timeline'))"
                ".slice(0, 5).map(e => e.tagName + '.' + e.className + ' '"
                " + Math.round(e.getBoundingClientRect().right))")
            assert width <= 390 and not wider, f"{name}: page {width} px wide; beyond the screen: {wider}"
    finally:
        driver.quit()
