"""GET /status in a real headless Chromium: a real node, two real volunteers and
a verified matmul, then the page as a browser renders it: its title, the jobs table with the job's
id and state, the connected volunteers' ids, the recent verdicts; no research data (no input
digest, no input value, no researcher e-mail or token, no network address); a volunteer whose hello
names a `<script>` backend shown as text, with no script element and no alert; and the same page
over https, the browser pinned to the node's own certificate key.

One browser session for the file (Selenium + Debian's chromium-driver, as test_access_requests).
"""

import base64
import hashlib
import re

import numpy as np
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from conftest import START_TIMEOUT
from test_access_requests import CHROMEDRIVER, CHROMIUM
from test_observability import HOSTILE_BACKEND, hostile_volunteer
from test_tls import tls_args, pki

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 120.0
TITLE = "GPU Goblin lab node"
SECTIONS = ["Jobs", "Connected volunteers", "Recent verdicts"]
# A value no page cell could show unless the page leaked the job's input.
MARKER = 31415.92653


@pytest.fixture(scope="module")
def status_pki(tmp_path_factory):
    """test_tls's CA and localhost certificate, made once for this file's browser."""
    return pki.__wrapped__(tmp_path_factory.mktemp("status-pki"))


def spki_pin(certificate_path) -> str:
    """base64(SHA-256(SubjectPublicKeyInfo)), the form Chromium's SPKI allow-list takes."""
    certificate = x509.load_pem_x509_certificate(certificate_path.read_bytes())
    spki = certificate.public_key().public_bytes(serialization.Encoding.DER,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode("ascii")


@pytest.fixture(scope="module")
def browser(status_pki):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-extensions", "--no-first-run",
                 # Trusts the test node's certificate key and no other (chromedriver's profile
                 # directory makes Chromium honour the list).
                 "--ignore-certificate-errors-spki-list=" + spki_pin(status_pki / "server.crt")):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def table(browser, section: str):
    """The cell texts of the table under the <h2> named `section`, header row first."""
    rows = browser.find_elements(By.XPATH, "//h2[text()='%s']/following-sibling::table[1]//tr"
                                 % section)
    return [[cell.text for cell in row.find_elements(By.XPATH, "./th|./td")] for row in rows]


def assert_page_shape(browser):
    assert browser.title == TITLE
    assert [h.text for h in browser.find_elements(By.TAG_NAME, "h2")] == SECTIONS
    assert browser.find_elements(By.TAG_NAME, "script") == []
    assert table(browser, "Jobs")[0] == ["job", "kind", "state", "tasks done", "tasks"]
    assert table(browser, "Connected volunteers")[0] == [
        "volunteer", "backend", "slots", "leases", "audits passed", "quarantined"]
    assert table(browser, "Recent verdicts")[0] == ["kind", "task", "volunteer", "method",
                                                    "verdict"]


def test_status_page_in_a_browser(shared_cluster, browser):
    cluster = shared_cluster
    rng = np.random.default_rng(5)
    A = rng.uniform(-1, 1, (64, 32))
    A[3, 7] = MARKER
    B = rng.uniform(-1, 1, (32, 64))
    client = cluster.connect(cluster.token)
    C = client.matmul(A, B, tile=[16, 16], timeout=JOB_TIMEOUT)
    np.testing.assert_allclose(C, A @ B, rtol=1e-12, atol=1e-9)
    (job, a_blob, b_blob), = cluster.query("SELECT id, a_blob, b_blob FROM jobs")
    tasks = {row[0] for row in cluster.query("SELECT id FROM tasks WHERE job_id = ?", (job,))}
    honest = {row[0] for row in cluster.query("SELECT id FROM volunteers")}
    assert len(honest) == 2 and len(tasks) == 16

    ws, hostile = hostile_volunteer(cluster)
    try:
        url = "http://127.0.0.1:%d/status" % cluster.port

        def shown_volunteers():
            browser.get(url)
            ids = {row[0] for row in table(browser, "Connected volunteers")[1:]}
            return ids if ids == honest | {hostile} else None

        cluster.wait_until(shown_volunteers, 30, "/status to list all three volunteers", 0.2)
        assert_page_shape(browser)

        jobs = table(browser, "Jobs")[1:]
        assert len(jobs) == 1, jobs
        assert jobs[0][:2] == [job, "matmul"] and jobs[0][3:] == ["16", "16"], jobs
        assert jobs[0][2] in ("done", "released"), jobs

        volunteers = {row[0]: row for row in table(browser, "Connected volunteers")[1:]}
        # The hostile backend is text: the browser shows the markup as written, runs nothing.
        assert volunteers[hostile][1] == HOSTILE_BACKEND
        assert volunteers[hostile][5] == "no"
        for volunteer in honest:
            assert volunteers[volunteer][1] not in ("", HOSTILE_BACKEND)
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text

        verdicts = table(browser, "Recent verdicts")[1:]
        assert verdicts, "no recent verdicts after a 16-tile job"
        for kind, task, volunteer, method, verdict in verdicts:
            assert kind == "matmul" and int(task) in tasks and volunteer in honest
            assert method and verdict == "accepted", verdicts

        # No research data: nothing of the inputs, the researcher or the volunteers' addresses.
        source = browser.page_source
        text = browser.find_element(By.TAG_NAME, "body").text
        for secret in (a_blob, b_blob, "alice@example.org", cluster.token, "127.0.0.1",
                       "31415", "3.14159"):
            assert secret not in source and secret not in text, secret
        assert re.fullmatch(r"[0-9a-f]{64}", a_blob), a_blob  # the digests checked are real
    finally:
        ws.close()


def test_status_page_over_https(cluster, status_pki, browser):
    node = cluster.start_node(extra_args=tls_args(status_pki))
    node.wait_for_line(re.compile(r"TLS: serving wss:// and https:// only"), START_TIMEOUT)
    browser.get("https://localhost:%d/status" % cluster.port)
    assert_page_shape(browser)
    assert table(browser, "Jobs")[1:] == [] and table(browser, "Connected volunteers")[1:] == []
