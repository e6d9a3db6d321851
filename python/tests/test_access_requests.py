"""Access requests end to end: a real goblin-labnode mailing sign-in codes to a
real SMTP server on loopback (aiosmtpd), a real headless Chromium driven through sign-in, the
request form, staff approval with `goblin-labnode requests approve`, the credential shown once,
and a verified matmul with that credential. Then the bad input: wrong and replayed codes, a POST
without its CSRF token, a 10 MB field, and `<script>` in every field."""

import email
import email.policy
import html
import http.client
import json
import re
import socket
import sqlite3
import ssl
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest

# Missing ones fail the run (never a skip): scripts/install_deps.sh --test installs them.
import aiosmtpd.controller as aiosmtpd_controller
import goblin
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from conftest import LABNODE
from test_tls import pki, tls_cluster  # noqa: F401  (fixtures: a CA, a certificate, a TLS node)

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
MAIL_TIMEOUT = 30.0
JOB_TIMEOUT = 120.0
SCRIPT = "<script>document.title='owned'</script>"


class Mailbox:
    """An aiosmtpd handler that keeps every message it receives."""

    def __init__(self):
        self.messages = []
        self._changed = threading.Condition()

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self._changed:
            self.messages.append((list(envelope.rcpt_tos), message))
            self._changed.notify_all()
        return "250 OK"

    def wait_for(self, count: int):
        deadline = time.monotonic() + MAIL_TIMEOUT
        with self._changed:
            while len(self.messages) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    pytest.fail("the SMTP server got %d mails, expected %d"
                                % (len(self.messages), count))
                self._changed.wait(left)
            return self.messages[count - 1]

    def code(self, count: int, to: str) -> str:
        recipients, message = self.wait_for(count)
        assert recipients == [to]
        assert message["To"].addresses[0].addr_spec == to
        assert message["Subject"] == "Your GPU Goblin sign-in code"
        match = re.search(r"sign-in code for the GPU Goblin lab node is (\d{8})",
                          message.get_content())
        assert match, message.get_content()
        return match.group(1)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def smtp():
    mailbox = Mailbox()
    controller = aiosmtpd_controller.Controller(mailbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    mailbox.url = "smtp://127.0.0.1:%d" % controller.port
    try:
        yield mailbox
    finally:
        controller.stop()


@pytest.fixture
def node(cluster, smtp):
    cluster.init_db()
    cluster.start_node(extra_args=["--smtp-url", smtp.url, "--smtp-from", "node@lab.example"])
    cluster.http = "http://127.0.0.1:%d" % cluster.port
    return cluster


@pytest.fixture
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-extensions", "--no-first-run"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    driver.implicitly_wait(10)  # a form's answer may wait for the mail to go out
    try:
        yield driver
    finally:
        driver.quit()


class Http:
    """A cookie-keeping form client (http.client): what a scripted attacker or a second browser
    would send, for the bad-input cases."""

    def __init__(self, port: int, context: "ssl.SSLContext | None" = None):
        self.port = port
        self.context = context  # https:// with this context when given
        self.cookie = ""

    def request(self, method: str, path: str, body: bytes = b"", headers=None):
        connection = (http.client.HTTPSConnection("localhost", self.port, timeout=30,
                                                  context=self.context) if self.context else
                      http.client.HTTPConnection("127.0.0.1", self.port, timeout=30))
        fields = {"Content-Type": "application/x-www-form-urlencoded"}
        if self.cookie:
            fields["Cookie"] = self.cookie
        fields.update(headers or {})
        try:
            connection.request(method, path, body=body, headers=fields)
            answer = connection.getresponse()
            text = answer.read().decode("utf-8", "replace")
        finally:
            connection.close()
        cookie = answer.getheader("Set-Cookie")
        if cookie:
            self.cookie = cookie.split(";")[0]
        return answer.status, answer.getheader("Location"), text

    def get(self, path: str):
        return self.request("GET", path)

    def post(self, path: str, fields, headers=None):
        return self.request("POST", path, urllib.parse.urlencode(fields, doseq=True).encode(),
                            headers)

    @staticmethod
    def csrf(page: str) -> str:
        match = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        assert match, page
        return match.group(1)

    def sign_in(self, mailbox: Mailbox, address: str) -> str:
        """Signs in through the code mailed to `address`; returns the CSRF token of the session."""
        _, _, page = self.get("/access")
        sent = len(mailbox.messages)
        status, location, _ = self.post("/access/code", {"csrf": self.csrf(page),
                                                         "email": address})
        assert (status, location) == (303, "/access/verify")
        code = mailbox.code(sent + 1, address)
        _, _, page = self.get("/access/verify")
        status, location, _ = self.post("/access/verify", {"csrf": self.csrf(page), "code": code})
        assert (status, location) == (303, "/access/request")
        status, _, page = self.get("/access/request")
        assert status == 200
        return self.csrf(page)


def data_notice_in(page: str) -> bool:
    """goblin.DATA_WARNING, verbatim (HTML-escaped as the node escapes text), in a served page:
    the node's copy of the text must never drift from the client's."""
    escaped = html.escape(goblin.DATA_WARNING, quote=True).replace("&#x27;", "&#39;")
    return ('<p class="data-notice" id="data-notice">%s</p>' % escaped) in page


def requests_in_db(cluster) -> int:
    return cluster.query("SELECT count(*) FROM access_requests")[0][0]


def test_browser_sign_in_request_approval_credential_and_matmul(node, smtp, browser):
    address = "ada@lab.example"
    browser.get(node.http + "/access")
    assert data_notice_in(browser.page_source)
    assert browser.find_element(By.ID, "data-notice").text == goblin.DATA_WARNING
    assert "we mail you a one-time code" in browser.find_element(By.ID, "sign-in-intro").text
    browser.find_element(By.ID, "email").send_keys(address)
    browser.find_element(By.ID, "send-code").click()
    code = smtp.code(1, address)
    assert browser.find_element(By.ID, "pending-email").text == address
    assert browser.find_element(By.ID, "code-sent").text.startswith("We sent a one-time code to")
    assert data_notice_in(browser.page_source)
    cookie = browser.get_cookie("goblin_access")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    browser.find_element(By.ID, "code").send_keys(code)
    browser.find_element(By.ID, "sign-in").click()
    assert browser.find_element(By.ID, "signed-in").text == address
    assert browser.get_cookie("goblin_access")["value"] != cookie["value"]  # replaced at sign-in

    browser.find_element(By.ID, "name").send_keys("Ada Lovelace")
    browser.find_element(By.ID, "institution").send_keys("Analytical Engine Lab")
    browser.find_element(By.ID, "purpose").send_keys("Bernoulli numbers, at scale")
    browser.find_element(By.ID, "computation-matmul").click()
    browser.find_element(By.ID, "needs").send_keys("sparse solvers one day")
    browser.find_element(By.ID, "scale").send_keys("a few GFLOP a day")
    browser.find_element(By.ID, "submit-request").click()
    assert browser.find_element(By.ID, "state").text == "pending"
    assert browser.find_element(By.ID, "field-computations").text == "matmul"
    assert 'id="show-credential"' not in browser.page_source

    listing = node.staff("requests", "list").stdout
    match = re.search(r"^(\d+)\tpending\t.*\tada@lab\.example\tAda Lovelace\t", listing, re.M)
    assert match, listing
    request_id = match.group(1)
    approved = node.staff("requests", "approve", request_id)
    assert "approved request %s of ada@lab.example" % request_id in approved.stdout
    assert node.staff("requests", "approve", request_id, check=False).returncode != 0

    browser.refresh()
    assert browser.find_element(By.ID, "state").text == "approved"
    browser.find_element(By.ID, "show-credential").click()
    token = browser.find_element(By.ID, "credential").text
    assert re.fullmatch(r"[0-9a-f]{64}", token), token
    assert data_notice_in(browser.page_source)  # the credential page too
    assert browser.find_element(By.ID, "connect-url").text == node.url
    # Only its hash is stored, and it is shown once: afterwards only its existence.
    assert node.query("SELECT count(*) FROM researchers WHERE email = ? AND token_hash != ?",
                      (address, token)) == [(1,)]
    browser.get(node.http + "/access/request")
    assert token not in browser.page_source
    assert browser.find_elements(By.ID, "credential-shown")
    assert "credential: shown" in node.staff("requests", "show", request_id).stdout

    node.start_volunteer(threads=1, slots=2)
    client = node.connect(token)
    rng = np.random.default_rng(3)
    A = rng.standard_normal((64, 48))
    B = rng.standard_normal((48, 40))
    C = client.matmul(A, B, tile=[32, 20], timeout=JOB_TIMEOUT)
    np.testing.assert_allclose(C, A @ B, rtol=1e-12, atol=1e-12)
    assert node.query("SELECT count(*) FROM results WHERE verdict = 'accepted'")[0][0] >= 4


def test_wrong_and_replayed_codes_are_refused(node, smtp):
    web = Http(node.port)
    _, _, page = web.get("/access")
    csrf = web.csrf(page)
    assert web.post("/access/code", {"csrf": csrf, "email": "bob@lab.example"})[0] == 303
    code = smtp.code(1, "bob@lab.example")
    wrong = "%08d" % ((int(code) + 1) % 10 ** 8)
    status, _, page = web.post("/access/verify", {"csrf": csrf, "code": wrong})
    assert status == 401 and "wrong code" in page
    status, location, _ = web.post("/access/verify", {"csrf": csrf, "code": code})
    assert (status, location) == (303, "/access/request")

    # The same code again, from a new session that asks for the same address.
    replay = Http(node.port)
    _, _, page = replay.get("/access")
    replay_csrf = replay.csrf(page)
    assert replay.post("/access/code", {"csrf": replay_csrf, "email": "bob@lab.example"})[0] == 303
    smtp.wait_for(2)
    status, _, page = replay.post("/access/verify", {"csrf": replay_csrf, "code": code})
    assert status == 401 and "already used" in page
    assert replay.get("/access/request")[1] == "/access"  # not signed in


def test_an_expired_code_is_refused_and_a_new_one_works(node, smtp):
    web = Http(node.port)
    _, _, page = web.get("/access")
    csrf = web.csrf(page)
    assert web.post("/access/code", {"csrf": csrf, "email": "old@lab.example"})[0] == 303
    code = smtp.code(1, "old@lab.example")
    # Time passes (as the node's clock sees it): the code's expiry moves into the past.
    with sqlite3.connect(str(node.db), timeout=10) as db:
        db.execute("UPDATE access_codes SET expires_at = issued_at - 1")
    status, _, page = web.post("/access/verify", {"csrf": csrf, "code": code})
    assert status == 401 and "expired" in page
    assert web.post("/access/code", {"csrf": csrf, "email": "old@lab.example"})[0] == 303
    fresh = smtp.code(2, "old@lab.example")
    assert web.post("/access/verify", {"csrf": csrf, "code": fresh})[:2] == (303,
                                                                           "/access/request")


def test_codes_are_rate_limited_per_email(node, smtp):
    web = Http(node.port)
    _, _, page = web.get("/access")
    csrf = web.csrf(page)
    for _ in range(5):
        assert web.post("/access/code", {"csrf": csrf, "email": "many@lab.example"})[0] == 303
    status, _, page = web.post("/access/code", {"csrf": csrf, "email": "many@lab.example"})
    assert status == 429 and "too many codes" in page
    assert len(smtp.messages) == 5
    assert web.post("/access/code", {"csrf": csrf, "email": "other@lab.example"})[0] == 303


def test_approval_is_refused_when_the_email_already_has_a_credential(node, smtp):
    web = Http(node.port)
    csrf = web.sign_in(smtp, "alice@example.org")
    assert web.post("/access/request", {"csrf": csrf, "name": "Alice", "institution": "X",
                                        "purpose": "p", "computation": "graph",
                                        "scale": "s"})[0] == 303
    node.add_researcher("alice@example.org")
    refused = node.staff("requests", "approve", "1", check=False)
    assert refused.returncode != 0 and "already has an active credential" in refused.stderr
    assert "state: pending" in node.staff("requests", "show", "1").stdout


def test_posts_without_the_sessions_csrf_token_are_refused(node, smtp):
    web = Http(node.port)
    _, _, page = web.get("/access")
    assert web.post("/access/code", {"email": "eve@lab.example"})[0] == 403
    assert web.post("/access/code", {"csrf": "0" * 64, "email": "eve@lab.example"})[0] == 403
    # A token from another session does not do either.
    other = Http(node.port)
    _, _, other_page = other.get("/access")
    assert web.post("/access/code", {"csrf": other.csrf(other_page),
                                     "email": "eve@lab.example"})[0] == 403
    assert smtp.messages == []
    assert any("without its session's CSRF token" in line for line in node.node.lines)
    # Signed in, the request form refuses a CSRF-less post too, and stores nothing.
    web.sign_in(smtp, "eve@lab.example")
    status, _, _ = web.post("/access/request", {"name": "Eve", "institution": "X",
                                                "purpose": "p", "computation": "graph",
                                                "scale": "s"})
    assert status == 403
    assert requests_in_db(node) == 0


def test_a_10_mb_field_is_refused_and_nothing_is_stored(node, smtp):
    web = Http(node.port)
    csrf = web.sign_in(smtp, "mallory@lab.example")
    fields = {"csrf": csrf, "name": "M", "institution": "X", "purpose": "x" * (10 << 20),
              "computation": "matmul", "scale": "s"}
    status, _, page = web.post("/access/request", fields)
    assert status == 413, page
    # Within the body limit but over the field's own: a clear message naming the field.
    fields["purpose"] = "x" * 4001
    status, _, page = web.post("/access/request", fields)
    assert status == 400
    assert "Research purpose: at most 4000 bytes (got 4001)" in page
    assert requests_in_db(node) == 0
    assert web.get("/access/request")[0] == 200  # the node still serves


def test_script_tags_in_every_field_are_escaped(node, smtp):
    web = Http(node.port)
    csrf = web.sign_in(smtp, "script@lab.example")
    fields = {"csrf": csrf, "name": SCRIPT, "institution": SCRIPT, "purpose": SCRIPT,
              "computation": "graph", "needs": SCRIPT, "scale": SCRIPT}
    status, location, _ = web.post("/access/request", fields)
    assert (status, location) == (303, "/access/request")
    _, _, page = web.get("/access/request")
    assert "<script" not in page
    assert page.count(html.escape(SCRIPT, quote=True).replace("&#x27;", "&#39;")) == 5
    request_id = re.search(r"Request (\d+) of", page).group(1)
    shown = node.staff("requests", "show", request_id).stdout
    assert shown.count(SCRIPT) == 5, shown  # printed as typed (a terminal runs no markup)
    assert "\x1b" not in shown
    node.staff("requests", "refuse", request_id, "--reason", SCRIPT)
    _, _, page = web.get("/access/request")
    assert "<script" not in page and "was refused" in page
    assert page.count(html.escape(SCRIPT, quote=True).replace("&#x27;", "&#39;")) == 1


@pytest.mark.parametrize("action", ["list", "show", "approve", "refuse"])
def test_requests_commands_help_and_refuse_a_missing_database(tmp_path, action):
    shown = subprocess.run([str(LABNODE), "requests", action, "--help"], capture_output=True,
                           text=True, timeout=30)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: goblin-labnode requests")
    missing = tmp_path / "typo.db"
    args = [str(LABNODE), "requests", action] + ([] if action == "list" else ["1"])
    refused = subprocess.run(args + ["--db", str(missing)], capture_output=True, text=True,
                             timeout=30)
    assert refused.returncode != 0
    assert "no database at %s" % missing in refused.stderr
    assert not missing.exists()


def test_without_a_relay_codes_go_to_a_file_staff_can_read(cluster):
    cluster.start_node()
    web = Http(cluster.port)
    _, _, page = web.get("/access")
    status, location, _ = web.post("/access/code", {"csrf": web.csrf(page),
                                                    "email": "Zoe@Lab.example"})
    assert (status, location) == (303, "/access/verify")
    codes = cluster.data_dir / "access-codes.txt"
    line = codes.read_text().splitlines()[-1]
    assert re.search(r" zoe@lab\.example \d{8} \(valid 15 minutes\)$", line), line
    assert codes.stat().st_mode & 0o077 == 0  # the node's user only
    assert any("access-codes.txt" in line for line in cluster.node.lines)
    code = line.split()[2]
    # One log line per code: the address and where staff find it, never the code itself.
    logged = cluster.node.wait_for_line(re.compile(
        r"Z info access: sign-in code for zoe@lab\.example written to (\S+) for lab staff to "
        r"pass on \(no SMTP relay\)$"), 10)
    assert logged.group(1) == str(codes)
    assert not any(code in line for line in cluster.node.lines)
    status, location, _ = web.post("/access/verify", {"csrf": web.csrf(page), "code": code})
    assert (status, location) == (303, "/access/request")



def test_without_a_relay_the_pages_say_staff_pass_the_code_on(cluster, browser):
    """No SMTP relay: Chromium is told the code goes to lab staff (never "we sent"), staff find it
    where the log line says, the request shows in `status`, and the credential page gives the
    address that goblin.connect then reaches."""
    cluster.start_node()
    address = "noor@lab.example"
    browser.get("http://127.0.0.1:%d/access" % cluster.port)
    intro = browser.find_element(By.ID, "sign-in-intro").text
    assert "the one-time code goes to the lab staff, who pass it on to you" in intro, intro
    browser.find_element(By.ID, "email").send_keys(address)
    browser.find_element(By.ID, "send-code").click()
    sent = browser.find_element(By.ID, "code-sent").text
    assert sent == ("This node has no mail relay: the one-time code for %s went to the lab "
                    "staff, who pass it on to you. Ask them for it and type it here." % address)
    assert "We sent" not in browser.page_source and "check" not in sent.lower()
    assert data_notice_in(browser.page_source)
    logged = cluster.node.wait_for_line(re.compile(
        r"access: sign-in code for %s written to (\S+) " % re.escape(address)), 10)
    code = open(logged.group(1)).read().splitlines()[-1].split()[2]
    browser.find_element(By.ID, "code").send_keys(code)
    browser.find_element(By.ID, "sign-in").click()
    for field, text in (("name", "Noor"), ("institution", "Lab"), ("purpose", "Spectra"),
                        ("scale", "small")):
        browser.find_element(By.ID, field).send_keys(text)
    browser.find_element(By.ID, "computation-graph").click()
    browser.find_element(By.ID, "submit-request").click()
    assert browser.find_element(By.ID, "state").text == "pending"
    assert data_notice_in(browser.page_source)

    status = cluster.staff("status").stdout
    assert re.search(r"^requests +1 pending \(goblin-labnode requests list --state pending\)$",
                     status, re.M), status
    assert json.loads(cluster.staff("status", "--json").stdout)["access_requests"] == {
        "pending": 1}
    listed = json.loads(cluster.staff("requests", "list", "--state", "pending", "--json").stdout)
    assert [(r["email"], r["state"], r["computations"]) for r in listed] == [
        (address, "pending", ["graph"])]
    shown = json.loads(cluster.staff("requests", "show", str(listed[0]["id"]), "--json").stdout)
    assert shown["purpose"] == "Spectra" and shown["credential_shown"] is None
    cluster.staff("requests", "approve", str(listed[0]["id"]))
    assert re.search(r"^requests +0 pending$", cluster.staff("status").stdout, re.M)

    browser.refresh()
    browser.find_element(By.ID, "show-credential").click()
    token = browser.find_element(By.ID, "credential").text
    url = browser.find_element(By.ID, "connect-url").text
    assert url == "ws://127.0.0.1:%d" % cluster.port
    assert data_notice_in(browser.page_source)
    with goblin.connect(url, token=token, timeout=30):
        pass


def test_the_credential_page_gives_the_public_url_when_one_is_set(cluster):
    cluster.start_node(extra_args=["--public-url", "wss://goblin.lab.example:7443"])
    cluster.node.wait_for_line(re.compile(r"a new credential's page gives goblin\.connect the "
                                          r"address wss://goblin\.lab\.example:7443$"), 10)
    web = Http(cluster.port)
    _, _, page = web.get("/access")
    assert web.post("/access/code", {"csrf": web.csrf(page), "email": "kim@lab.example"})[0] == 303
    line = (cluster.data_dir / "access-codes.txt").read_text().splitlines()[-1]
    status, _, _ = web.post("/access/verify", {"csrf": web.csrf(page), "code": line.split()[2]})
    _, _, page = web.get("/access/request")
    csrf = web.csrf(page)
    web.post("/access/request", {"csrf": csrf, "name": "Kim", "institution": "X", "purpose": "p",
                                 "computation": "matmul", "scale": "s"})
    cluster.staff("requests", "approve", "1")
    status, _, page = web.post("/access/credential", {"csrf": csrf})
    assert status == 200
    assert '<code id="connect-url">wss://goblin.lab.example:7443</code>' in page
    assert data_notice_in(page)


def test_over_https_the_session_cookie_is_secure(tls_cluster, pki):
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    with urllib.request.urlopen("https://localhost:%d/access" % tls_cluster.port,
                                context=context, timeout=30) as answer:
        assert answer.status == 200
        cookie = answer.headers["Set-Cookie"]
    assert cookie.startswith("goblin_access=")
    assert "; Secure" in cookie and "; HttpOnly" in cookie and "; SameSite=Strict" in cookie


def test_over_https_the_credential_page_gives_the_wss_address_the_browser_used(tls_cluster, pki):
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    web = Http(tls_cluster.port, context)
    _, _, page = web.get("/access")
    csrf = web.csrf(page)
    assert web.post("/access/code", {"csrf": csrf, "email": "tls@lab.example"})[0] == 303
    code = (tls_cluster.data_dir / "access-codes.txt").read_text().splitlines()[-1].split()[2]
    web.post("/access/verify", {"csrf": csrf, "code": code})
    _, _, page = web.get("/access/request")
    csrf = web.csrf(page)
    web.post("/access/request", {"csrf": csrf, "name": "T", "institution": "X", "purpose": "p",
                                 "computation": "matmul", "scale": "s"})
    tls_cluster.staff("requests", "approve", "1")
    status, _, page = web.post("/access/credential", {"csrf": csrf})
    assert status == 200 and data_notice_in(page)
    url = re.search(r'<code id="connect-url">([^<]+)</code>', page).group(1)
    assert url == "wss://localhost:%d" % tls_cluster.port  # the certificate's name, not 127.0.0.1
    token = re.search(r'<code id="credential">([0-9a-f]{64})</code>', page).group(1)
    with goblin.connect(url, token=token, ca_file=str(pki / "ca.crt"), timeout=30):
        pass


def test_a_relay_that_cannot_be_reached_is_a_clear_error(cluster):
    cluster.start_node(extra_args=["--smtp-url", "smtp://127.0.0.1:%d" % free_port()])
    web = Http(cluster.port)
    _, _, page = web.get("/access")
    status, _, page = web.post("/access/code", {"csrf": web.csrf(page),
                                                "email": "ada@lab.example"})
    assert status == 503 and "could not send the code" in page
    cluster.wait_until(lambda: any("could not send a sign-in code to ada@lab.example" in line
                                   for line in cluster.node.lines), 10, "the log line")


def test_a_bad_smtp_url_stops_serve(cluster):
    cluster.init_db()
    done = subprocess.run([str(LABNODE), "serve", "--db", str(cluster.db), "--listen",
                           "127.0.0.1:0", "--smtp-url", "http://mail.lab.example"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode != 0
    assert "--smtp-url must start with smtp:// or smtps://" in done.stderr
