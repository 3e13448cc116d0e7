"""The HTML report as a reader sees it: the report of a small real run, opened in headless Chromium
(Debian's chromium and chromedriver, which `make test` installs). Every figure must have drawn its
points, every table must have its rows, and the page must log no errors. Screenshots of the first
screen and of the whole page are left in test-artifacts/ (ignored by git)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fhemark.drivers.registry import manifests
from fhemark.measure.runner import Runner
from fhemark.plan.jobs import build
from fhemark.plan.suites import Suite
from fhemark.report import write
from fhemark.report.overview import build as build_overview
from fhemark.report.tables import all_tables
from fhemark.store.sqlite import Store

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
SCREEN = (1400, 1000)  # the first screen a reader's window shows


@pytest.fixture(scope="module")
def report(tmp_path_factory, driver_pool):
    """SEAL (and Lattigo where its driver is built, so the ratio figures are drawn too) on BFV and
    CKKS at N = 4096, four ops, six samples in six rounds (the fewest with an interval): seconds."""
    driver_pool("seal")
    libraries = ["seal"] + [lib for lib in ("lattigo",) if manifests()[lib].available]
    suite = Suite(name="browser-test", policy={"min_samples": 6, "max_samples": 6, "warmup": 0, "budget_s": 0.05, "rounds": 6},
                  cases=[{"libraries": libraries, "schemes": ["bfv", "ckks"],
                          "params": [{"N": 4096, "q_bits": [40, 40], "p_bits": [40], "t": 65537, "scale_bits": 30}],
                          "ops": ["add", "mul_relin", "encode", "mul_scalar"]}])  # SEAL's encode and mul_scalar deviate
    out = tmp_path_factory.mktemp("browser")
    store = Store(out / "r.db")
    run_id = store.start_run("browser-test", "h", True, {}, {})
    Runner(build(suite, libraries, allow_insecure=True), store, run_id, {"threads": 1}).execute()
    recs = list(store.records(run_id))
    assert recs and all(r.status == "ok" for r in recs), [(r.op, r.status, r.error) for r in recs]
    write(recs, out / "report", "browser test", recs[0].env, store.runs())
    return out / "report" / "report.html", recs


@pytest.fixture(scope="module")
def chromium():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("Chromium is not installed here (make test installs Debian's chromium and chromium-driver "
                    "with apt-get, which needs root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={SCREEN[0]},{SCREEN[1]}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    browser.set_page_load_timeout(60)
    yield browser
    browser.quit()


def _screenshots(browser) -> list[Path]:
    """The first screen as a reader's window shows it, and the whole page."""
    import base64

    ARTIFACTS.mkdir(exist_ok=True)
    first = ARTIFACTS / "report-first-screen.png"
    browser.save_screenshot(str(first))
    whole = ARTIFACTS / "report-full-page.png"
    width, height = browser.execute_script("return [document.documentElement.scrollWidth, document.body.scrollHeight]")
    shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": min(height, 16000), "scale": 1}})
    whole.write_bytes(base64.b64decode(shot["data"]))
    return [first, whole]


def test_the_report_renders_in_chromium(chromium, report, capsys):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    page, recs = report
    overview = build_overview(recs)
    tables = all_tables(recs)
    browser = chromium
    browser.get(page.as_uri())
    count = "return document.querySelectorAll('#overview .js-plotly-plot .main-svg .scatterlayer').length"
    try:
        WebDriverWait(browser, 30).until(lambda b: b.execute_script(count) == len(overview.setups))
    finally:
        shots = _screenshots(browser)
        shutil.copy(page, ARTIFACTS / "report.html")
        with capsys.disabled():
            print(f"\nbrowser test screenshots: {', '.join(map(str, shots))}")

    # No table pushes the page sideways (the noise and sizes table did at 1400 px): wide ones scroll in place.
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    # Every figure drew one point per (operation, library) and marked each deviating cell with its ‡n.
    assert len(overview.setups) == 2 and all(len(s.libraries) == len(overview.setups[0].libraries) for s in overview.setups)
    for i, s in enumerate(overview.setups):
        fig = browser.find_element(By.ID, f"overview-{i}")
        assert fig.find_elements(By.CSS_SELECTOR, ".main-svg"), s.title
        points = fig.find_elements(By.CSS_SELECTOR, ".scatterlayer .points path")
        assert len(points) == len(s.cells) == len(s.ops) * len(s.libraries), s.title
        marks = [e.text for e in fig.find_elements(By.CSS_SELECTOR, ".scatterlayer .textpoint")]
        assert sorted(marks) == sorted(c.deviation.strip() for c in s.cells if c.deviation) and marks, s.title
        ticks = [e.text for e in fig.find_elements(By.CSS_SELECTOR, ".yaxislayer-above .ytick text")]
        assert "encode ‡" in ticks and "add" in ticks, ticks
        if s.compared:  # the intervals of the ratios are drawn
            assert fig.find_elements(By.CSS_SELECTOR, ".scatterlayer .errorbar path"), s.title

    # Hovering a point shows its median, interval, samples, run and job.
    setup = overview.setups[0]
    first = next(c for c in setup.cells if c.library == setup.libraries[0] and not c.deviation)  # trace 0, point 0
    browser.execute_script("Plotly.Fx.hover(document.getElementById('overview-0'), [{curveNumber: 0, pointNumber: 0}]);")
    label = WebDriverWait(browser, 10).until(lambda b: b.find_element(By.CSS_SELECTOR, "#overview-0 .hoverlayer .hovertext")).text
    assert "median" in label and "samples" in label and first.rec.run_id in label and first.rec.job_key in label

    # A click on a legend entry hides that library; a second click shows it again.
    # (Plotly acts on a click once its double-click window has passed, hence the waits.)
    visible = "return document.getElementById('overview-0').data.map(function (t) { return t.visible === 'legendonly'; })"
    browser.find_element(By.CSS_SELECTOR, "#overview-0 .legend .traces .legendtoggle").click()
    hidden = WebDriverWait(browser, 5).until(lambda b: any(b.execute_script(visible)) and b.execute_script(visible))
    libs = browser.execute_script("return document.getElementById('overview-0').data.map(function (t) { return t.name; })")
    assert {lib for lib, h in zip(libs, hidden) if h} == {setup.libraries[0]}  # both of its traces, no other
    browser.find_element(By.CSS_SELECTOR, "#overview-0 .legend .traces .legendtoggle").click()
    WebDriverWait(browser, 5).until(lambda b: not any(b.execute_script(visible)))

    # The overview table has a row per setup; every detailed table has the rows the records call for.
    rows = "return document.querySelectorAll(arguments[0]).length"
    assert browser.execute_script(rows, "#overview table tbody tr") == len(overview.setups)
    for i, t in enumerate(tables):
        assert browser.execute_script(rows, f"#t{i} + div.wide table tbody tr") == len(t.rows), t.title

    # Tables sort by a column's values (times in ns, not as text), and back.
    i = next(i for i, t in enumerate(tables) if len(t.rows) > 1 and t.title.startswith("add"))
    head = browser.find_element(By.CSS_SELECTOR, f"#t{i} + div.wide table thead th:nth-child(2)")
    head.click()
    cells = [e.text for e in browser.find_elements(By.CSS_SELECTOR, f"#t{i} + div.wide table tbody td:nth-child(2)")]
    assert head.get_attribute("aria-sort") == "ascending" and [_ns(c) for c in cells] == sorted(_ns(c) for c in cells)
    head.click()
    cells = [e.text for e in browser.find_elements(By.CSS_SELECTOR, f"#t{i} + div.wide table tbody td:nth-child(2)")]
    assert [_ns(c) for c in cells] == sorted((_ns(c) for c in cells), reverse=True)

    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def _ns(cell: str) -> float:
    value, unit = cell.split()[:2]
    return float(value) * {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}[unit]


def test_the_history_page_renders_in_chromium(chromium, report):
    """`fhemark report --history` over the same store: one drawn figure per operation, a point per
    run of every case, no console error."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from fhemark.report import history
    page, recs = report
    store = Store(page.parent.parent / "r.db", readonly=True)
    path = history.write([store], page.parent.parent / "history")
    browser = chromium
    browser.get_log("browser")  # what earlier pages logged is theirs
    browser.get(path.as_uri())
    WebDriverWait(browser, 20).until(lambda b: b.execute_script("return document.querySelectorAll("
                                                                "'.history-figure .main-svg').length") > 0)
    ops = {r.op for r in recs}
    figures = browser.find_elements(By.CSS_SELECTOR, ".history-figure")
    assert len(figures) == len(ops)
    drawn = browser.execute_script("return document.querySelectorAll('.history-figure .scatterlayer .point').length")
    assert drawn == len(recs)  # one run: a point per case
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
