"""The live lab dashboard (GET /) in a real headless Chromium, on a real node with real volunteers:
empty sections say so in words; a matmul submitted after the page loaded appears as running and
then shows finished, and the throughput and verdict charts fill, all without a page reload; a
training job shows with its rounds and their losses (a table and the loss chart); a volunteer whose
hello names a `<script>` backend is shown as text. /metrics, read by prometheus_client's parser,
counts training jobs, the process (build info, start time, uptime), pending access requests,
connected researchers, bans and quarantines.

One node and one browser for the file; its tests run in order on the same page.
"""

import sqlite3
import subprocess
import time

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from conftest import LABNODE, Cluster
from test_access_requests import CHROMEDRIVER, CHROMIUM
from test_observability import HOSTILE_BACKEND, fetch, hostile_volunteer

pytestmark = pytest.mark.integration

WAIT = 120.0  # generous: the machine may be loaded; nothing here asserts on time
TITLE = "GPU Goblin lab node: dashboard"
# A Chart.js chart's datasets as {label, ys} (bar values or the y of line points).
CHART_DATA = """
const chart = Chart.getChart(arguments[0]);
if (!chart) return null;
return chart.data.datasets.map((d) => ({label: d.label,
                                        ys: d.data.map((v) => typeof v === "number" ? v : v.y)}));
"""
# How many pixels of a canvas were painted (not fully transparent).
PAINTED = """
const canvas = document.getElementById(arguments[0]);
const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
let painted = 0;
for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) ++painted;
return painted;
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """A node with a researcher and no volunteer yet (the first test starts them)."""
    instance = Cluster(tmp_path_factory.mktemp("dashboard"))
    try:
        instance.token = instance.add_researcher("dash@example.org")
        instance.start_node()
        instance.client = instance.connect(instance.token, timeout=120)
        yield instance
    finally:
        instance.shutdown()
        print(instance.logs())


@pytest.fixture(scope="module")
def browser(node):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-extensions", "--no-first-run", "--window-size=1280,2000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        driver.get("http://127.0.0.1:%d/" % node.port)
        yield driver
    finally:
        driver.quit()


def text_of(browser, css):
    """The text content of the first element matching `css` (hidden or not), or None."""
    return browser.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", css)


def shown(browser, element_id):
    return browser.find_element(By.ID, element_id).is_displayed()


def job_row(browser, job):
    """The cells of the jobs table's row of `job` and its data-state, or None."""
    return browser.execute_script("""
        const row = document.querySelector('#jobs tr[data-job="' + arguments[0] + '"]');
        return row ? [row.dataset.state, [...row.cells].map((c) => c.textContent)] : null;
    """, job)


def chart(browser, canvas):
    return browser.execute_script(CHART_DATA, canvas)


def still_the_same_page(browser):
    return browser.execute_script("return window.dashboardTestMark === 'first load';")


def families(node):
    status, _, body = fetch(node, "/metrics")
    assert status == 200
    return {family.name: family for family in text_string_to_metric_families(body.decode())}


def value(family, **labels):
    return sum(sample.value for sample in family.samples
               if all(sample.labels.get(key) == want for key, want in labels.items()))


def test_the_dashboard_follows_a_job_without_a_reload(node, browser):
    node.wait_until(lambda: "Updates by itself" in (text_of(browser, "#freshness") or ""), WAIT,
                    "the dashboard's first poll", 0.2)
    assert browser.title == TITLE
    # Nothing from outside the node: every script and style sheet is the node's own.
    origin = "http://127.0.0.1:%d/" % node.port
    sources = browser.execute_script(
        "return [...document.scripts].map((s) => s.src)"
        ".concat([...document.querySelectorAll('link[rel=stylesheet]')].map((l) => l.href));")
    assert sources and all(source.startswith(origin) for source in sources), sources
    # Empty sections say so.
    for note, words in (("jobs-empty", "No job yet"), ("volunteers-empty", "No volunteer"),
                        ("training-empty", "No training job yet"),
                        ("verdicts-empty", "No verdict yet")):
        assert shown(browser, note) and words in browser.find_element(By.ID, note).text, note
    assert not shown(browser, "jobs")
    assert text_of(browser, "#throughput-note") == "No result was accepted in the last hour."
    assert chart(browser, "throughput-chart") == [] and chart(browser, "verdict-chart")
    assert text_of(browser, '[data-count="volunteers_connected"] .value') == "0"
    browser.execute_script("window.dashboardTestMark = 'first load';")

    rng = np.random.default_rng(34)
    A = rng.uniform(-1, 1, (64, 32))
    B = rng.uniform(-1, 1, (32, 64))
    handle = node.client.submit_matmul(A, B, tile=[16, 16])
    job = str(handle)
    state, cells = node.wait_until(lambda: job_row(browser, job), WAIT, "the job on the dashboard",
                                   0.2)
    assert state == "running" and cells[:3] == [job, "matmul", "running"], cells
    assert cells[3].strip() == "0 of 16 tasks" and cells[5] == "not yet", cells

    node.start_volunteer(threads=1, slots=2)
    node.start_volunteer(threads=1, slots=2)
    node.wait_until(lambda: (job_row(browser, job) or [None])[0] == "done", WAIT,
                    "the job to show done", 0.2)
    np.testing.assert_allclose(handle.result(timeout=WAIT), A @ B, rtol=1e-12, atol=1e-9)
    state, cells = node.wait_until(
        lambda: (lambda row: row if row and row[0] == "released" else None)(
            job_row(browser, job)), WAIT, "the fetched job to show released", 0.2)
    assert cells[3].strip() == "16 of 16 tasks" and cells[5] != "not yet", cells
    assert still_the_same_page(browser)

    # The charts drew the verdicts: 16 tiles accepted, none rejected.
    def charted():
        throughput = {d["label"]: sum(d["ys"]) for d in chart(browser, "throughput-chart")}
        verdicts = {d["label"]: sum(d["ys"]) for d in chart(browser, "verdict-chart")}
        return (throughput, verdicts) if throughput.get("matmul", 0) >= 16 else None
    throughput, verdicts = node.wait_until(charted, WAIT, "the charts to show the tiles", 0.2)
    assert verdicts["accepted"] >= 16 and verdicts["rejected"] == 0, verdicts
    assert text_of(browser, "#throughput-note") == ""
    for canvas in ("throughput-chart", "verdict-chart"):
        assert browser.execute_script(PAINTED, canvas) > 0, canvas
    assert browser.find_element(By.CSS_SELECTOR, "#verdicts tbody tr").is_displayed()

    volunteers = {row[0] for row in node.query("SELECT id FROM volunteers")}
    node.wait_until(lambda: text_of(browser, '[data-count="volunteers_connected"] .value') == "2",
                    WAIT, "two volunteers in the summary", 0.2)
    for volunteer in volunteers:
        row = '#volunteers tr[data-volunteer="%s"] ' % volunteer
        assert text_of(browser, row + "td:nth-child(2)"), volunteer  # its backend
        assert text_of(browser, row + "td:nth-child(6)") == "no", volunteer  # not quarantined
    assert not shown(browser, "volunteers-empty")

    # A backend with markup is shown as text; nothing runs.
    ws, hostile = hostile_volunteer(node)
    try:
        selector = '#volunteers tr[data-volunteer="%s"] td:nth-child(2)' % hostile
        node.wait_until(lambda: text_of(browser, selector) == HOSTILE_BACKEND, WAIT,
                        "the hostile volunteer's backend as text", 0.2)
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text
    finally:
        ws.close()
    assert still_the_same_page(browser)


def test_the_dashboard_shows_a_training_job_with_its_rounds_and_losses(node, browser):
    pytest.importorskip("torch", reason="torch is not installed (optional dependency)")
    from goblin import optim
    from training_models import training_family
    model, loss_fn, x, y = training_family("mlp", samples=16, seed=34)
    result = node.client.train(model, loss_fn, (x, y), optimizer=optim.SGD(lr=0.1), rounds=3,
                               batch_size=8, micro_batch=4, progress=False, timeout=WAIT)
    card = '#training-jobs [data-job="%s"]' % result.job
    node.wait_until(lambda: browser.execute_script(
        "const c = document.querySelector(arguments[0]);"
        "return c && c.dataset.state === 'retained' && c.querySelectorAll('tr[data-round]')"
        ".length === 3;", card), WAIT, "the training job's card with three rounds", 0.2)
    assert "3 of 3 rounds" in text_of(browser, card)
    rounds = browser.execute_script(
        "return [...document.querySelectorAll(arguments[0] + ' tr[data-round]')]"
        ".map((r) => [...r.cells].map((c) => c.textContent));", card)
    assert [int(row[0]) for row in rounds] == [2, 1, 0], rounds  # newest first
    round_jobs = [record.job for record in result.history]
    assert sorted(row[5] for row in rounds) == sorted(round_jobs)
    np.testing.assert_allclose([float(row[1]) for row in reversed(rounds)], result.losses,
                               rtol=1e-4)
    # The loss chart: one line per training job, its points (round, loss).
    lines = {d["label"]: d["ys"] for d in chart(browser, "loss-chart")}
    np.testing.assert_allclose(lines[result.job], result.losses, rtol=1e-6)
    assert browser.execute_script(PAINTED, "loss-chart") > 0
    assert not shown(browser, "training-empty")
    # The jobs table lists the training job, not its rounds' graph jobs; released, it keeps its
    # data for the audits of its rounds (retained).
    state, cells = job_row(browser, result.job)
    assert cells[1:3] == ["train", "retained"] and cells[3].strip() == "3 of 3 rounds", cells
    for graph_job in round_jobs:
        assert job_row(browser, graph_job) is None, graph_job
    assert still_the_same_page(browser)
    # Nothing the page did was refused (Content-Security-Policy) or failed.
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == [], errors

    jobs = families(node)["goblin_jobs"]
    assert value(jobs, kind="train", state="retained") == 1
    assert value(jobs, kind="train", state="running") == 0


def test_metrics_count_the_process_people_bans_and_quarantines(node):
    before = families(node)
    version = subprocess.run([str(LABNODE), "--version"], capture_output=True, text=True,
                             timeout=30).stdout.split()[-1]
    build = before["goblin_build_info"]
    assert [(s.labels, s.value) for s in build.samples] == [({"version": version}, 1.0)]
    started = value(before["process_start_time_seconds"])
    assert 0 < started <= time.time()
    assert value(before["goblin_uptime_seconds"]) > 0
    assert value(before["goblin_researchers_connected"]) == 1  # this module's client
    assert value(before["goblin_access_requests_pending"]) == 0
    assert value(before["goblin_volunteers_banned"]) == 0
    assert value(before["goblin_volunteers_quarantined"]) == 0

    # A pending access request and a quarantined volunteer, as the node records them.
    with sqlite3.connect(str(node.db), timeout=30) as db:
        db.execute("INSERT INTO access_requests(email, name, institution, purpose, computations, "
                   "needs, scale, created_at) VALUES('new@example.org', 'N', 'I', 'P', 'C', 'N', "
                   "'S', 0)")
        db.execute("INSERT INTO volunteer_trust(volunteer_id, quarantined_at, quarantine_reason) "
                   "VALUES('v-caught', 1, 'test')")
    banned = sorted(row[0] for row in node.query("SELECT id FROM volunteers"))[0]
    node.staff("volunteers", "ban", banned, "--reason", "dashboard test")
    other = node.connect(node.token)
    after = families(node)
    assert value(after["goblin_access_requests_pending"]) == 1
    assert value(after["goblin_volunteers_quarantined"]) == 1
    assert value(after["goblin_volunteers_banned"]) == 1
    assert value(after["goblin_researchers_connected"]) == 2
    assert value(after["process_start_time_seconds"]) == started
    assert value(after["goblin_uptime_seconds"]) >= value(before["goblin_uptime_seconds"])
    other.close()
