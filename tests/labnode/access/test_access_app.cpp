// Tests of the access app's routes with a fake mailer, an injected clock and a real SQLite file:
// the cookie's attributes, CSRF refusals, sign-in by mailed code (and the session it replaces),
// a refused over-long field stores nothing, and the credential is shown once and works.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <optional>
#include <string>

#include "access/access_app.hpp"
#include "access/access_requests.hpp"
#include "node/secrets.hpp"
#include "store/node_store.hpp"

using goblin::core::SeededRandom;
using goblin::labnode::hashSecret;
using goblin::labnode::NodeStore;
using goblin::net::HttpAnswer;
using goblin::net::HttpRequest;
using namespace goblin::labnode::access;

namespace {

class FakeMailer final : public CodeMailer {
public:
    void send(CodeMail mail, MailDone done) override {
        sent.push_back(mail);
        done({});
    }
    std::string describe() const override { return "fake"; }
    std::string destination() const override { return "fake destination"; }
    std::vector<CodeMail> sent;
};

struct Browser {
    std::string cookie; // "goblin_access=…"
    std::string csrf;
};

std::string header(const HttpAnswer& answer, const std::string& name) {
    for (const auto& [key, value] : answer.headers)
        if (key == name)
            return value;
    return {};
}

std::string between(const std::string& text, const std::string& before, const std::string& after) {
    const auto start = text.find(before);
    if (start == std::string::npos)
        return {};
    const auto from = start + before.size();
    return text.substr(from, text.find(after, from) - from);
}

struct Fixture {
    explicit Fixture(AccessSettings accessSettings = {true, {}, "", "wss://node.example:7000"})
        : settings(std::move(accessSettings)) {}

    AccessSettings settings;
    std::string host = "goblin.lab.example:7443"; // the Host field of every request
    QTemporaryDir dir;
    NodeStore store{dir.filePath("node.db").toStdString()};
    double now = 1'800'000'000.0;
    SeededRandom random{7};
    FakeMailer mailer;
    std::vector<std::string> log;
    AccessApp app{store.database(),
                  [this] { return now; },
                  random,
                  mailer,
                  [this](const std::string& line) { log.push_back(line); },
                  settings};

    HttpAnswer call(const std::string& method, const std::string& path, const Browser& browser,
                    const std::string& body = "") {
        HttpRequest request;
        request.method = method;
        request.path = path;
        request.cookie = browser.cookie;
        request.contentType = "application/x-www-form-urlencoded";
        request.body = body;
        request.peer = "127.0.0.1";
        request.host = host;
        std::optional<HttpAnswer> answer;
        app.handle(request, [&answer](HttpAnswer a) { answer = std::move(a); });
        if (!answer)
            qFatal("no answer");
        return *answer;
    }

    // Follows Set-Cookie and reads the CSRF token of the page.
    void take(Browser& browser, const HttpAnswer& answer) {
        const std::string setCookie = header(answer, "Set-Cookie");
        if (!setCookie.empty())
            browser.cookie = setCookie.substr(0, setCookie.find(';'));
        const std::string csrf = between(answer.body, "name=\"csrf\" value=\"", "\"");
        if (!csrf.empty())
            browser.csrf = csrf;
    }

    Browser signIn(const std::string& email) {
        Browser browser;
        take(browser, call("GET", "/access", browser));
        take(browser,
             call("POST", "/access/code", browser, "csrf=" + browser.csrf + "&email=" + email));
        take(browser, call("GET", "/access/verify", browser));
        const HttpAnswer in = call("POST", "/access/verify", browser,
                                   "csrf=" + browser.csrf + "&code=" + mailer.sent.back().code);
        take(browser, in);
        take(browser, call("GET", "/access/request", browser));
        return browser;
    }

    // Signs in, asks, is approved and opens the credential page: its connect address.
    std::string connectUrlShown() {
        Browser browser = signIn("ada@lab.example");
        call("POST", "/access/request", browser,
             "csrf=" + browser.csrf + "&name=Ada" +
                 "&institution=Lab&purpose=Numbers"
                 "&computation=matmul&scale=small");
        const auto request = latestAccessRequest(store.database(), "ada@lab.example");
        if (!request || !decideAccessRequest(store.database(), request->id, "approved", "", now))
            qFatal("no request to approve");
        const HttpAnswer page = call("POST", "/access/credential", browser, "csrf=" + browser.csrf);
        return between(page.body, "<code id=\"connect-url\">", "</code>");
    }

    std::int64_t requests() {
        auto query = store.database().prepare("SELECT count(*) FROM access_requests");
        return query.step().value_or(false) ? query.columnInt(0) : -1;
    }
};

const std::string kFormButName = "&institution=Lab&purpose=Numbers&computation=matmul"
                                 "&scale=small";
const std::string kForm = "&name=Ada" + kFormButName;

} // namespace

class TestAccessApp : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theSessionCookieIsHttpOnlyStrictAndSecure() {
        Fixture f;
        const HttpAnswer first = f.call("GET", "/access", {});
        QCOMPARE(first.status, 200u);
        const std::string cookie = header(first, "Set-Cookie");
        QVERIFY(cookie.find("HttpOnly") != std::string::npos);
        QVERIFY(cookie.find("SameSite=Strict") != std::string::npos);
        QVERIFY(cookie.find("; Secure") != std::string::npos);
        QVERIFY(header(first, "Content-Security-Policy").find("default-src 'none'") !=
                std::string::npos);
        // Page views store nothing: a session is stored once a code is sent for it.
        auto sessions = f.store.database().prepare("SELECT count(*) FROM access_sessions");
        QVERIFY(sessions.step().value_or(false));
        QCOMPARE(sessions.columnInt(0), std::int64_t{0});
    }

    void postsWithoutTheSessionsCsrfTokenAreRefused() {
        Fixture f;
        Browser browser;
        f.take(browser, f.call("GET", "/access", browser));
        QCOMPARE(f.call("POST", "/access/code", browser, "email=ada@lab.example").status, 403u);
        QCOMPARE(f.call("POST", "/access/code", browser, "csrf=00&email=ada@lab.example").status,
                 403u);
        Browser other; // another session's token
        f.take(other, f.call("GET", "/access", other));
        const std::string stolen = "csrf=" + other.csrf + "&email=ada@lab.example";
        QCOMPARE(f.call("POST", "/access/code", browser, stolen).status, 403u);
        QCOMPARE(f.call("POST", "/access/code", {}, "csrf=" + browser.csrf).status, 403u);
        QVERIFY(f.mailer.sent.empty());
        QCOMPARE(f.call("POST", "/access/code", browser,
                        "csrf=" + browser.csrf + "&email=Ada%40Lab.example")
                     .status,
                 303u);
        QCOMPARE(f.mailer.sent.size(), std::size_t{1});
        QCOMPARE(f.mailer.sent[0].to, std::string("ada@lab.example"));
    }

    void signingInReplacesTheSessionAndAWrongCodeDoesNot() {
        Fixture f;
        Browser browser;
        f.take(browser, f.call("GET", "/access", browser));
        const Browser anonymous = browser;
        f.take(browser, f.call("POST", "/access/code", browser,
                               "csrf=" + browser.csrf + "&email=ada@lab.example"));
        const HttpAnswer wrong =
            f.call("POST", "/access/verify", browser, "csrf=" + browser.csrf + "&code=1");
        QCOMPARE(wrong.status, 401u);
        QVERIFY(wrong.body.find("wrong code") != std::string::npos);
        const HttpAnswer right = f.call("POST", "/access/verify", browser,
                                        "csrf=" + browser.csrf + "&code=" + f.mailer.sent[0].code);
        QCOMPARE(right.status, 303u);
        QCOMPARE(header(right, "Location"), std::string("/access/request"));
        f.take(browser, right);
        QVERIFY(browser.cookie != anonymous.cookie);
        // The old session is gone: its cookie no longer reaches the request page.
        QCOMPARE(header(f.call("GET", "/access/request", anonymous), "Location"),
                 std::string("/access"));
        QCOMPARE(f.call("GET", "/access/request", browser).status, 200u);
    }

    void anOverlongFieldStoresNothing() {
        Fixture f;
        Browser browser = f.signIn("ada@lab.example");
        const std::string longName(kNameField.maxBytes + 1, 'n');
        const HttpAnswer refused =
            f.call("POST", "/access/request", browser,
                   "csrf=" + browser.csrf + "&name=" + longName + kFormButName);
        QCOMPARE(refused.status, 400u);
        QVERIFY(refused.body.find("Name: at most 200 bytes") != std::string::npos);
        QCOMPARE(f.requests(), std::int64_t{0});
    }

    void theCredentialIsShownOnceAndAuthenticates() {
        Fixture f;
        Browser browser = f.signIn("ada@lab.example");
        QCOMPARE(f.call("POST", "/access/request", browser, "csrf=" + browser.csrf + kForm).status,
                 303u);
        QCOMPARE(f.requests(), std::int64_t{1});
        const auto request = latestAccessRequest(f.store.database(), "ada@lab.example");
        QVERIFY(request && request->state == "pending");
        // Before approval nothing is shown.
        const HttpAnswer early =
            f.call("POST", "/access/credential", browser, "csrf=" + browser.csrf);
        QCOMPARE(early.status, 303u);
        QVERIFY(decideAccessRequest(f.store.database(), request->id, "approved", "", f.now)
                    .has_value());
        const HttpAnswer once =
            f.call("POST", "/access/credential", browser, "csrf=" + browser.csrf);
        QCOMPARE(once.status, 200u);
        const std::string token = between(once.body, "<code id=\"credential\">", "</code>");
        QCOMPARE(token.size(), std::size_t{64});
        QVERIFY(f.store.researcherByTokenHash(hashSecret(token)).has_value());
        const HttpAnswer again =
            f.call("POST", "/access/credential", browser, "csrf=" + browser.csrf);
        QCOMPARE(again.status, 303u);
        const HttpAnswer page = f.call("GET", "/access/request", browser);
        QVERIFY(page.body.find(token) == std::string::npos);
        QVERIFY(page.body.find("id=\"credential-shown\"") != std::string::npos);
    }

    void theCredentialPageGivesTheAddressToConnectTo() {
        Fixture fromHost; // TLS, listening on every address: the Host the browser used
        QCOMPARE(fromHost.connectUrlShown(), std::string("wss://goblin.lab.example:7443"));
        Fixture plain(AccessSettings{false, {}, "", "ws://node.example:7000"});
        plain.host = "10.1.2.3:7000";
        QCOMPARE(plain.connectUrlShown(), std::string("ws://10.1.2.3:7000"));
        Fixture hostile;
        hostile.host = "evil.example/\"><script>";
        QCOMPARE(hostile.connectUrlShown(), std::string("wss://node.example:7000"));
        Fixture fixed(AccessSettings{true, {}, "wss://goblin.lab.example", "ws://unused:1"});
        fixed.host = "127.0.0.1:7000";
        QCOMPARE(fixed.connectUrlShown(), std::string("wss://goblin.lab.example"));
    }

    void eachCodeIssuedIsLoggedWithoutTheCode() {
        Fixture f;
        f.signIn("ada@lab.example");
        QCOMPARE(f.mailer.sent.size(), std::size_t{1});
        const std::string code = f.mailer.sent[0].code;
        std::vector<std::string> lines;
        for (const std::string& line : f.log)
            if (line.find("sign-in code for ada@lab.example") != std::string::npos)
                lines.push_back(line);
        QCOMPARE(lines.size(), std::size_t{1});
        QVERIFY2(lines[0].find("fake destination") != std::string::npos, lines[0].c_str());
        for (const std::string& line : f.log)
            QVERIFY2(line.find(code) == std::string::npos, line.c_str());
    }
};

QTEST_APPLESS_MAIN(TestAccessApp)
#include "test_access_app.moc"
