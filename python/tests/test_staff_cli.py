"""The lab staff's command line against a real goblin-labnode: one node per database,
`init` and the refusal of a missing database, `--help` on every sub-command, researchers'
credentials (validation, --rotate, list, revoke)."""

import json
import re
import subprocess

import numpy as np
import pytest

import goblin
from conftest import LABNODE, LISTENING, START_TIMEOUT, Process

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

SUBCOMMANDS = [["init"], ["serve"], ["researcher", "add"], ["researchers", "list"],
               ["researchers", "revoke"], ["volunteers", "list"], ["volunteers", "approve"],
               ["volunteer", "list"], ["volunteer", "approve"], ["volunteers", "show"],
               ["volunteers", "ban"], ["volunteers", "unban"], ["jobs", "list"], ["jobs", "show"],
               ["status"]]


def labnode(*args, timeout=30):
    return subprocess.run([str(LABNODE)] + list(args), capture_output=True, text=True,
                          timeout=timeout)


def healthz(port):
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=10) as answer:
        return answer.status


def test_second_serve_on_one_database_is_refused_and_the_first_keeps_serving(cluster):
    first = cluster.start_node()
    assert healthz(cluster.port) == 200
    second = labnode("serve", "--db", str(cluster.db), "--listen", "127.0.0.1:0",
                     "--data-dir", str(cluster.root / "other-data"), timeout=START_TIMEOUT)
    assert second.returncode != 0
    assert "another goblin-labnode" in second.stderr, second.stderr
    assert "pid %d" % first.popen.pid in second.stderr, second.stderr
    assert "listening on 127.0.0.1:%d" % cluster.port in second.stderr, second.stderr
    assert str(cluster.db) in second.stderr
    assert "listening" not in second.stdout  # it never served
    assert first.alive()
    assert healthz(cluster.port) == 200
    # And the first still does work: a researcher connects to it.
    token = cluster.add_researcher()
    with goblin.connect(cluster.url, token=token, timeout=30):
        pass


def test_second_serve_on_one_data_folder_is_refused(cluster):
    cluster.start_node()
    other = cluster.root / "other.db"
    assert labnode("init", "--db", str(other)).returncode == 0
    second = labnode("serve", "--db", str(other), "--listen", "127.0.0.1:0",
                     "--data-dir", str(cluster.data_dir), timeout=START_TIMEOUT)
    assert second.returncode != 0
    assert "data directory" in second.stderr and "pid %d" % cluster.node.popen.pid in second.stderr
    assert healthz(cluster.port) == 200


def test_a_stopped_or_killed_node_releases_its_database(cluster):
    cluster.start_node()
    assert cluster.node.stop() == 0  # SIGTERM right after "listening" is a clean shutdown
    cluster.start_node()
    assert healthz(cluster.port) == 200
    cluster.node.kill9()  # the kernel drops the flock with the process: no stale lock
    cluster.start_node()
    assert healthz(cluster.port) == 200


def test_init_creates_and_every_command_refuses_a_missing_database(tmp_path):
    missing = tmp_path / "typo.db"
    for args in (["serve", "--listen", "127.0.0.1:0"], ["researcher", "add", "ada@lab.example"],
                 ["jobs", "list"], ["status"], ["volunteers", "ban", "v-1", "--reason", "x"],
                 ["researchers", "list"], ["researchers", "revoke", "ada@lab.example"],
                 ["volunteers", "list"], ["volunteer", "approve", "v-1"]):
        done = labnode(*args, "--db", str(missing))
        assert done.returncode != 0, args
        assert "no database at %s" % missing in done.stderr, (args, done.stderr)
        assert "goblin-labnode init" in done.stderr
        assert not missing.exists(), args
    created = labnode("init", "--db", str(missing))
    assert created.returncode == 0, created.stderr
    assert missing.exists()
    again = labnode("init", "--db", str(missing))
    assert again.returncode != 0 and "already exists" in again.stderr
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database at all" * 100)
    for args in (["researchers", "list"], ["serve", "--listen", "127.0.0.1:0", "--data-dir",
                                           str(tmp_path / "data")]):
        done = labnode(*args, "--db", str(corrupt))
        assert done.returncode != 0 and "listening" not in done.stdout, args
        assert "%s: database: file is not a database" % corrupt in done.stderr, done.stderr


@pytest.mark.parametrize("words", SUBCOMMANDS, ids=lambda words: "-".join(words))
def test_help_on_every_subcommand_goes_to_stdout_and_exits_0(words):
    done = labnode(*words, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: goblin-labnode " + " ".join(words[:1])), done.stdout
    assert "--db" in done.stdout and done.stderr == ""


def test_top_level_help_and_version():
    done = labnode("--help")
    assert done.returncode == 0 and "init --db PATH" in done.stdout and "--listen" in done.stdout
    version = labnode("--version")
    assert version.returncode == 0
    assert re.fullmatch(r"goblin-labnode \d+\.\d+\.\d+\n", version.stdout), version.stdout


def test_researcher_credentials_validate_rotate_list_and_revoke(cluster):
    cluster.start_node()
    for bad in ("ada", "ada@lab", "ada@@lab.example", "ada lovelace@lab.example"):
        done = cluster.staff("researcher", "add", bad, check=False)
        assert done.returncode != 0 and "is not an e-mail address" in done.stderr, bad
    token = cluster.add_researcher("Ada@Lab.Example")
    refused = cluster.staff("researcher", "add", "ada@lab.example", check=False)
    assert refused.returncode != 0 and "--rotate" in refused.stderr
    with goblin.connect(cluster.url, token=token, timeout=30):
        pass  # the first token still works after the refused add
    rotated = cluster.staff("researcher", "add", "ada@lab.example", "--rotate").stdout.strip()
    assert rotated and rotated != token
    with pytest.raises(goblin.GoblinError):
        goblin.connect(cluster.url, token=token, timeout=30)
    with goblin.connect(cluster.url, token=rotated, timeout=30):
        pass
    cluster.node.wait_for_line(re.compile(r"researcher hello from \S+ refused: "
                                          r"unauthenticated: invalid access token"), 30)

    cluster.add_researcher("bob@lab.example")
    listing = cluster.staff("researchers", "list").stdout
    assert re.search(r"^ada@lab\.example\t\d{4}-\d\d-\d\d \d\d:\d\d UTC\tactive$", listing, re.M)
    assert "2 researchers" in listing
    assert cluster.staff("researchers", "revoke", "ada@lab.example").returncode == 0
    with pytest.raises(goblin.GoblinError):
        goblin.connect(cluster.url, token=rotated, timeout=30)
    listing = cluster.staff("researchers", "list").stdout
    assert re.search(r"^ada@lab\.example\t.*\trevoked \d{4}-", listing, re.M), listing
    assert re.search(r"^bob@lab\.example\t.*\tactive$", listing, re.M), listing
    unknown = cluster.staff("researchers", "revoke", "nobody@lab.example", check=False)
    assert unknown.returncode != 0 and "no researcher nobody@lab.example" in unknown.stderr


VOLUNTEER_ID = re.compile(r"registered with the lab node as (v-\S+) ")
REFUSED = re.compile(r"the lab node refused this volunteer: banned: (.*)")


def test_a_ban_disconnects_a_running_volunteer_and_refuses_it_until_unbanned(cluster):
    cluster.start_node()
    first = cluster.start_volunteer()
    volunteer = first.wait_for_line(VOLUNTEER_ID, START_TIMEOUT).group(1)
    listing = cluster.staff("volunteers", "list").stdout
    # Open admission (the default): working without approval reads "open", not "not-approved".
    assert re.search(r"^%s\t\S+\topen\t" % volunteer, listing, re.M), listing

    no_reason = cluster.staff("volunteers", "ban", volunteer, check=False)
    assert no_reason.returncode != 0 and "--reason" in no_reason.stderr
    unknown = cluster.staff("volunteers", "ban", "v-nobody", "--reason", "x", check=False)
    assert unknown.returncode != 0 and "no volunteer registered as v-nobody" in unknown.stderr

    cluster.staff("volunteers", "ban", volunteer, "--reason", "returns garbage on purpose")
    # The running node acts on it within its two-second database check.
    # Log lines carry the level the role gave them: "<UTC time> <level> <message>".
    cluster.node.wait_for_line(re.compile(r"Z warning volunteer %s BANNED by lab staff: returns "
                                          r"garbage on purpose" % volunteer), 30)
    cluster.node.wait_for_line(re.compile(r"volunteer %s QUARANTINED: banned by lab staff: "
                                          % volunteer), 30)
    closed = first.wait_for_line(REFUSED, 30)
    assert "banned by lab staff: returns garbage on purpose" in closed.group(1), closed.group(0)
    detail = cluster.staff("volunteers", "show", volunteer).stdout
    assert re.search(r"^banned +\d{4}-\d\d-\d\d \d\d:\d\d UTC: returns garbage on purpose$",
                     detail, re.M), detail
    assert re.search(r"^%s\t\S+\tbanned\t" % volunteer,
                     cluster.staff("volunteers", "list").stdout, re.M)
    assert cluster.query("SELECT banned FROM volunteers WHERE id = ?", (volunteer,)) == [(1,)]

    # The same identity (same config folder) is refused at hello.
    first.stop()
    again = cluster.start_volunteer(config_dir=first.config_dir)
    refused = again.wait_for_line(REFUSED, START_TIMEOUT)
    assert "banned by the lab" in refused.group(1), refused.group(0)
    cluster.node.wait_for_line(re.compile(r"Z warning volunteer hello from \S+ refused: banned: "
                                          r"this volunteer is banned by the lab"), 30)

    cluster.staff("volunteers", "unban", volunteer)
    cluster.node.wait_for_line(re.compile(r"Z info volunteer %s unbanned by lab staff: admitted "
                                          r"again" % volunteer), 30)
    again.stop()
    back = cluster.start_volunteer(config_dir=first.config_dir)
    back.wait_for_line(re.compile(r"connected to %s as %s " % (re.escape(cluster.url), volunteer)),
                       START_TIMEOUT)
    detail = cluster.staff("volunteers", "show", volunteer).stdout
    assert "ban lifted" in detail and "quarantined" not in detail, detail
    not_banned = cluster.staff("volunteers", "unban", volunteer, check=False)
    assert not_banned.returncode != 0 and "no ban on volunteer" in not_banned.stderr


def test_jobs_and_status_show_states_counts_and_the_researcher_never_data(cluster):
    token = cluster.add_researcher("ada@lab.example")
    cluster.add_researcher("bob@lab.example")
    cluster.staff("researchers", "revoke", "bob@lab.example")
    empty = cluster.staff("status").stdout
    assert re.search(r"^jobs +0$", empty, re.M) and "0 registered" in empty, empty
    cluster.start_node()
    cluster.start_volunteer()
    cluster.start_volunteer()
    rng = np.random.default_rng(12)
    A, B = rng.random((64, 48)), rng.random((48, 32))
    client = cluster.connect(token)
    job = client.submit_matmul(A, B, tile=[32, 32])
    C = client.fetch(job, timeout=120)
    assert np.allclose(C, A @ B)

    listing = cluster.staff("jobs", "list").stdout
    assert listing.startswith("ID\tKIND\tSTATE\tTASKS\tCREATED\tRESEARCHER\n"), listing
    row = re.search(r"^%s\tmatmul\t(\w+)\t2/2\t\d{4}-\d\d-\d\d \d\d:\d\d UTC\t"
                    r"ada@lab\.example$" % re.escape(job), listing, re.M)
    assert row, listing
    assert "1 job" in listing
    state = row.group(1)
    assert state == cluster.job_state(job)
    detail = cluster.staff("jobs", "show", job).stdout
    assert re.search(r"^tasks +2/2 done$", detail, re.M), detail
    assert re.search(r"^verdicts +2 accepted, 0 rejected$", detail, re.M), detail
    assert re.search(r"^researcher +ada@lab\.example$", detail, re.M), detail
    # No research data: neither the numbers nor the blobs' digests are printed.
    blobs = cluster.query("SELECT a_blob, b_blob FROM jobs WHERE id = ?", (job,))[0]
    assert not any(digest in listing + detail for digest in blobs)
    missing = cluster.staff("jobs", "show", "j-nope", check=False)
    assert missing.returncode != 0 and "no job j-nope" in missing.stderr

    status = cluster.staff("status").stdout
    assert re.search(r"^jobs +1 \(1 %s\)$" % state, status, re.M), status
    assert re.search(r"^volunteers +2 registered, 0 banned, 0 quarantined$", status, re.M), status
    assert re.search(r"^researchers +2 \(1 active\)$", status, re.M), status
    assert re.search(r"^requests +0 pending$", status, re.M), status

    # --json: one document each, the same facts as the text.
    jobs = json.loads(cluster.staff("jobs", "list", "--json").stdout)
    assert [(j["id"], j["kind"], j["tasks"], j["tasks_done"], j["researcher"]) for j in jobs] == [
        (job, "matmul", 2, 2, "ada@lab.example")]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", jobs[0]["created"]), jobs[0]
    shown = json.loads(cluster.staff("jobs", "show", job, "--json").stdout)
    assert shown["verdicts"] == {"accepted": 2, "rejected": 0} and shown["state"] == state
    assert json.loads(cluster.staff("status", "--json").stdout) == {
        "jobs": {"total": 1, "by_state": {state: 1}},
        "volunteers": {"registered": 2, "banned": 0, "quarantined": 0},
        "researchers": {"total": 2, "active": 1}, "access_requests": {"pending": 0}}
    researchers = json.loads(cluster.staff("researchers", "list", "--json").stdout)
    assert sorted((r["email"], r["active"], r["revoked"] is None) for r in researchers) == [
        ("ada@lab.example", True, True), ("bob@lab.example", False, False)]
    volunteers = json.loads(cluster.staff("volunteers", "list", "--json").stdout)
    assert volunteers["admission"] == "open" and len(volunteers["volunteers"]) == 2
    assert {v["state"] for v in volunteers["volunteers"]} == {"open"}
    assert sum(v["accepted"] for v in volunteers["volunteers"]) >= 2
    one = json.loads(cluster.staff("volunteers", "show", volunteers["volunteers"][0]["id"],
                                   "--json").stdout)
    assert one["id"] == volunteers["volunteers"][0]["id"] and one["banned"] is None


def test_serve_reads_a_config_file_with_the_flags_keys_and_the_command_line_wins(cluster):
    cluster.init_db()
    config = cluster.root / "node.conf"
    # Port 1 is not ours to take: the node starts only if --listen on the command line wins.
    config.write_text("# lab node\ndb = %s\nlisten = 127.0.0.1:1\ndata-dir = %s\n"
                      "lease-seconds = 30\n" % (cluster.db, cluster.data_dir))
    node = Process("labnode-config", [str(LABNODE), "serve", "--config", str(config),
                                      "--listen", "127.0.0.1:0"],
                   cluster.root / "labnode-config.log")
    cluster.processes.append(node)
    port = int(node.wait_for_line(LISTENING, START_TIMEOUT, first_only=True).group(1))
    assert port != 1 and healthz(port) == 200
    node.wait_for_line(re.compile(r"database %s, data directory %s$"
                                  % (re.escape(str(cluster.db)), re.escape(str(cluster.data_dir)))),
                       START_TIMEOUT)
    bad = cluster.root / "bad.conf"
    bad.write_text("db = %s\nlisten-port = 7000\n" % cluster.db)
    refused = labnode("serve", "--config", str(bad))
    assert refused.returncode != 0
    assert "--config %s" % bad in refused.stderr and "listen-port" in refused.stderr
    missing = labnode("serve", "--config", str(cluster.root / "none.conf"))
    assert missing.returncode != 0 and "cannot read --config" in missing.stderr


def test_volunteer_states_follow_the_admission_mode_of_the_serving_node(cluster):
    cluster.start_node()
    volunteer = cluster.start_volunteer().wait_for_line(VOLUNTEER_ID, START_TIMEOUT).group(1)
    listing = cluster.staff("volunteers", "list").stdout
    assert listing.startswith("ID\tBACKEND\tSTATE\tACCEPTED\tREJECTED\n"), listing
    assert re.search(r"^%s\t\S+\topen\t0\t0$" % volunteer, listing, re.M), listing
    assert listing.rstrip().endswith("1 volunteer (admission: open)"), listing
    assert re.search(r"^approved +not needed \(open mode",
                     cluster.staff("volunteers", "show", volunteer).stdout, re.M)
    cluster.node.stop()
    cluster.start_node(extra_args=["--volunteers", "approved"])
    listing = cluster.staff("volunteers", "list").stdout
    assert re.search(r"^%s\t\S+\tnot-approved\t" % volunteer, listing, re.M), listing
    assert "(admission: approved)" in listing
    shown = json.loads(cluster.staff("volunteers", "show", volunteer, "--json").stdout)
    assert (shown["state"], shown["approved"], shown["admission"]) == (
        "not-approved", False, "approved")
    cluster.staff("volunteers", "approve", volunteer)
    assert re.search(r"^%s\t\S+\tapproved\t" % volunteer,
                     cluster.staff("volunteers", "list").stdout, re.M)


REFUSED_OPTIONS = [
    ("threads", "0", "1 and 64"), ("threads", "65", "1 and 64"),
    ("lease-seconds", "-5", "1 and 86400"), ("lease-seconds", "0", "1 and 86400"),
    ("max-task-expiries", "0", "1 and 100"), ("max-tensor-mb", "0", "1 and 16384"),
    ("max-tensor-mb", "-5", "1 and 16384"), ("audit-floor", "1.5", "0 and 1"),
    ("audit-floor", "nan", "0 and 1"), ("probation-audits", "-1", "0 and 1000000"),
    ("shared-address-audit-rate", "-0.1", "0 and 1"), ("full-audit-share", "2", "0 and 1"),
    ("registrations-per-hour", "0", "1 and 1000000"), ("max-graph-task-mb", "0", "1 and 1048576"),
    ("audit-retention-hours", "-1", "0 and 87600"), ("retain-hours", "0", "0.01 and 87600"),
    ("retain-hours", "inf", "0.01 and 87600"), ("second-opinion-seconds", "-1", "0 and 86400"),
]


@pytest.mark.parametrize("name,value,bounds", REFUSED_OPTIONS,
                         ids=["%s=%s" % (n, v) for n, v, _ in REFUSED_OPTIONS])
def test_a_numeric_serve_option_out_of_range_is_refused_at_startup(tmp_path, name, value, bounds):
    db = tmp_path / "node.db"
    assert labnode("init", "--db", str(db)).returncode == 0
    done = labnode("serve", "--db", str(db), "--listen", "127.0.0.1:0", "--%s" % name, value)
    assert done.returncode == 1 and "listening" not in done.stdout
    assert done.stderr == "goblin-labnode: --%s must be between %s (got %s)\n" % (
        name, bounds, value), done.stderr
    # The same check holds for a --config file's values.
    config = tmp_path / "node.conf"
    config.write_text("%s = %s\n" % (name, value))
    done = labnode("serve", "--db", str(db), "--config", str(config))
    assert done.returncode == 1 and "--%s must be between %s" % (name, bounds) in done.stderr


def test_other_bad_values_are_refused_with_the_option_named(tmp_path):
    db = tmp_path / "node.db"
    assert labnode("init", "--db", str(db)).returncode == 0
    for args, message in (
            (["serve", "--listen", "127.0.0.1:99999"], "--listen port must be between 0 and 65535"),
            (["serve", "--listen", "127.0.0.1:x"], "--listen port must be between 0 and 65535"),
            (["serve", "--volunteers", "some"], "--volunteers must be 'open' or 'approved'"),
            (["serve", "--public-url", "http://lab.example"],
             "--public-url must be a ws:// or wss:// address"),
            (["serve", "--threads", "many"], "option '--threads' is invalid"),
            (["jobs", "cancel", "j-1", "--wait", "-1"], "--wait must be between 0 and 3600 (got -1)"),
            (["jobs", "purge", "j-1", "--wait", "7200"], "--wait must be between 0 and 3600")):
        done = labnode(*args, "--db", str(db))
        assert done.returncode == 1 and message in done.stderr, (args, done.stderr)


def test_help_shows_defaults_as_people_write_them():
    shown = labnode("serve", "--help").stdout
    for default in ("--audit-floor arg (=1)", "--lease-seconds arg (=120)",
                    "--shared-address-audit-rate arg (=0.5)", "--full-audit-share arg (=0.1)",
                    "--retain-hours arg (=72)", "--audit-retention-hours arg (=168)"):
        assert default in shown, default
    assert not re.search(r"\(=\d+\.\d{6,}\)", shown), shown
    assert "--wait arg (=10)" in labnode("jobs", "cancel", "--help").stdout
    assert "--state arg (=all)" in labnode("requests", "list", "--help").stdout


def test_two_databases_in_one_folder_get_their_own_data_folders(tmp_path):
    """Without --data-dir each database gets DB.goblin-data; a goblin-data folder from an earlier
    version stays with the database first served beside it. Both nodes serve at once."""
    legacy = tmp_path / "goblin-data"
    legacy.mkdir()
    (legacy / "access-codes.txt").write_text("kept\n")
    nodes = []
    for name in ("first.db", "second.db"):
        assert labnode("init", "--db", str(tmp_path / name)).returncode == 0
        node = Process(name, [str(LABNODE), "serve", "--db", str(tmp_path / name), "--listen",
                              "127.0.0.1:0"], tmp_path / (name + ".log"))
        nodes.append(node)
        try:
            port = int(node.wait_for_line(LISTENING, START_TIMEOUT, first_only=True).group(1))
            assert healthz(port) == 200
        except BaseException:
            node.stop()
            raise
    try:
        nodes[0].wait_for_line(re.compile(r"data directory %s \(kept: goblin-data beside the "
                                          r"database, made by an earlier version"
                                          % re.escape(str(legacy))), START_TIMEOUT)
        nodes[1].wait_for_line(re.compile(r"data directory %s \(new: " % re.escape(
            str(tmp_path / "second.db.goblin-data"))), START_TIMEOUT)
        assert (legacy / ".goblin-database").read_text() == "first.db\n"
        assert (tmp_path / "second.db.goblin-data" / ".goblin-database").read_text() == \
            "second.db\n"
        assert (legacy / "access-codes.txt").read_text() == "kept\n"
    finally:
        for node in nodes:
            node.stop()
    # Restarted, each keeps its folder.
    again = Process("again", [str(LABNODE), "serve", "--db", str(tmp_path / "first.db"),
                              "--listen", "127.0.0.1:0"], tmp_path / "again.log")
    try:
        again.wait_for_line(re.compile(r"data directory %s \(kept: goblin-data beside the "
                                       r"database belongs to it\)" % re.escape(str(legacy))),
                            START_TIMEOUT)
    finally:
        again.stop()
