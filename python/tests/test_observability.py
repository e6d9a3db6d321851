"""GET /metrics, /status and /healthz on a real lab node.

A node, one headless volunteer and a 16-tile matmul: the Prometheus text parses line by line and
its numbers move as the job runs; /status lists the job and the volunteer; a volunteer whose hello
names a `<script>` backend shows up escaped on the page.
"""

import html
import inspect
import json
import re
import urllib.error
import urllib.request

import numpy as np
import pytest
from websockets.sync.client import connect as ws_connect

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

try:  # Debian's python3-prometheus-client (install_deps --test installs it)
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    text_string_to_metric_families = None

JOB_TIMEOUT = 120.0
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')
HOSTILE_BACKEND = '<script>alert("x")</script>&'


def fetch(cluster, path):
    url = cluster.url.replace("ws://", "http://") + path
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


def parse_metrics(text):
    """{(name, frozenset(labels)): value}, failing on any line that is not exposition format."""
    samples, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram"), line
            typed.add(name)
            continue
        match = SAMPLE.match(line)
        assert match, "not a sample line: %r" % line
        name, _, labels, value = match.groups()
        pairs = {}
        if labels:
            consumed = 0
            for label in LABEL.finditer(labels):
                assert label.start() == consumed, "bad labels in %r" % line
                pairs[label.group(1)] = label.group(2)
                consumed = label.end()
            assert consumed == len(labels), "bad labels in %r" % line
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in typed or family in typed, "%s has no TYPE line" % name
        samples[(name, frozenset(pairs.items()))] = float(value)
    return samples


def total(samples, name, **labels):
    wanted = set(labels.items())
    return sum(value for (sample, pairs), value in samples.items()
               if sample == name and wanted <= set(pairs))


def metrics(cluster):
    """The samples of GET /metrics, read by the strict parser above and, where installed, by
    prometheus_client's own text parser (what a Prometheus server accepts): both must agree."""
    status, content_type, body = fetch(cluster, "/metrics")
    assert status == 200, body
    assert content_type.startswith("text/plain; version=0.0.4"), content_type
    text = body.decode("utf-8")
    samples = parse_metrics(text)
    if text_string_to_metric_families is not None:
        theirs = {(sample.name, frozenset(sample.labels.items())): float(sample.value)
                  for family in text_string_to_metric_families(text) for sample in family.samples}
        assert theirs == samples, set(theirs) ^ set(samples)
    return samples


def hostile_volunteer(cluster):
    """A volunteer connection whose hello names a backend with markup in it; returns it and its id."""
    options = {"compression": None, "open_timeout": 10}
    accepted = inspect.signature(ws_connect).parameters
    if "legacy" in accepted:
        options["legacy"] = True  # websockets >= 17 warns about plain connections otherwise
    if "proxy" in accepted:
        options["proxy"] = None
    ws = ws_connect(cluster.url + "/v1/volunteer", **options)
    ws.send(json.dumps({
        "type": "hello", "id": 1, "protocol": 1, "catalog": 1, "identity": None,
        "capabilities": {"backend": HOSTILE_BACKEND, "threads": 1, "memory_bytes": 1 << 20,
                         "dtypes": ["f64"], "ops": ["matmul"], "slots": 1}}))
    welcome = json.loads(ws.recv(timeout=20))
    assert welcome.get("type") == "welcome", welcome
    return ws, welcome["volunteer"]


def test_metrics_and_status_follow_a_job(cluster):
    token = cluster.add_researcher("observer@example.org")
    cluster.start_node()
    before = metrics(cluster)
    assert total(before, "goblin_volunteers_connected") == 0
    assert total(before, "goblin_verdicts_total") == 0
    status, _, body = fetch(cluster, "/healthz")
    assert (status, body) == (200, b"ok\n")

    cluster.start_volunteer(threads=1, slots=2)
    cluster.wait_until(lambda: total(metrics(cluster), "goblin_volunteers_connected") == 1, 60,
                       "the volunteer to show in /metrics")
    rng = np.random.default_rng(12)
    A = rng.uniform(-1, 1, (64, 32)).astype(np.float32)
    B = rng.uniform(-1, 1, (32, 64)).astype(np.float32)
    client = cluster.connect(token)
    C = client.matmul(A, B, tile=[16, 16], timeout=JOB_TIMEOUT)
    assert C.shape == (64, 64)

    after = metrics(cluster)
    # A delivered job is released (its blobs deleted) once the client fetched it.
    assert (total(after, "goblin_jobs", kind="matmul", state="done")
            + total(after, "goblin_jobs", kind="matmul", state="released")) >= 1
    assert total(after, "goblin_jobs", kind="matmul", state="running") == 0
    assert total(after, "goblin_verdicts_total", kind="matmul", verdict="accepted") >= 16
    assert total(after, "goblin_volunteers_connected") == 1
    assert total(after, "goblin_tasks_queued") == 0
    assert total(after, "goblin_verification_seconds_total") > 0
    # Every accepted tile was committed: the commit histogram counted at least that many.
    commits = total(after, "goblin_db_commit_seconds_count")
    assert commits >= 16
    assert total(after, "goblin_db_commit_seconds_bucket", le="+Inf") == commits
    assert total(after, "goblin_http_requests_total", path="/metrics") >= 2
    # A and B went in (8 KiB each in f32), C came back (16 KiB), plus the tiles to the volunteer.
    assert total(after, "goblin_received_bytes_total") - total(before, "goblin_received_bytes_total") \
        >= A.nbytes + B.nbytes + C.nbytes
    assert total(after, "goblin_sent_bytes_total") - total(before, "goblin_sent_bytes_total") \
        >= A.nbytes + B.nbytes + C.nbytes
    buckets = sorted((float(dict(pairs)["le"]), value) for (name, pairs), value in after.items()
                     if name == "goblin_db_commit_seconds_bucket")
    assert [value for _, value in buckets] == sorted(value for _, value in buckets)

    status, content_type, page = fetch(cluster, "/status")
    assert status == 200 and content_type.startswith("text/html"), content_type
    text = page.decode("utf-8")
    job = cluster.query("SELECT id FROM jobs")[0][0]
    assert re.search("<td>%s</td><td>matmul</td><td>(done|released)</td><td>16</td><td>16</td>"
                     % job, text), text
    volunteer = cluster.query("SELECT id FROM volunteers")[0][0]
    assert "<td>%s</td>" % volunteer in text
    assert "observer@example.org" not in text
    assert "127.0.0.1" not in text  # no volunteer's network address on an unauthenticated page

    # A hello with markup in its backend: shown escaped, never as markup.
    ws, hostile = hostile_volunteer(cluster)
    try:
        cluster.wait_until(lambda: total(metrics(cluster), "goblin_volunteers_connected") == 2, 30,
                           "the second volunteer to show in /metrics")
        page = fetch(cluster, "/status")[2].decode("utf-8")
        assert "<td>%s</td>" % hostile in page
        assert html.escape(HOSTILE_BACKEND, quote=True).replace("&#x27;", "&#39;") in page
        assert "<script" not in page
    finally:
        ws.close()
