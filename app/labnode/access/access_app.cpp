#include "access/access_app.hpp"

#include <algorithm>
#include <cctype>

#include "access/access_pages.hpp"
#include "access/access_requests.hpp"
#include "node/secrets.hpp"
#include "staff/email_address.hpp"
#include "store/researcher_book.hpp"

namespace goblin::labnode::access {
namespace {

constexpr const char* kCookie = "goblin_access";

net::HttpAnswer html(unsigned status, std::string body) {
    net::HttpAnswer answer{status, "text/html; charset=utf-8", std::move(body)};
    answer.headers = {
        {"Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; "
                                    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"},
        {"X-Content-Type-Options", "nosniff"},
        {"X-Frame-Options", "DENY"},
        {"Referrer-Policy", "no-referrer"},
        {"Cache-Control", "no-store"},
    };
    return answer;
}

net::HttpAnswer redirect(const std::string& location) {
    net::HttpAnswer answer = html(303, "");
    answer.headers.emplace_back("Location", location);
    return answer;
}

net::HttpAnswer message(unsigned status, const std::string& title, const std::string& text) {
    return html(status, messagePage(title, text));
}

// A Host field a browser may send: a name or address and an optional port, nothing else.
bool plausibleHost(const std::string& host) {
    if (host.empty() || host.size() > 255)
        return false;
    return std::all_of(host.begin(), host.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
               c == '[' || c == ']';
    });
}

PageNotes errorNote(std::string error) {
    PageNotes notes;
    notes.errors.push_back(std::move(error));
    return notes;
}

} // namespace

AccessApp::AccessApp(Database& db, Clock clock, core::RandomSource& random, CodeMailer& mailer,
                     NodeLog log, AccessSettings settings)
    : m_db(db), m_clock(clock), m_mailer(mailer), m_log(std::move(log)), m_settings(settings),
      m_sessions(db, clock), m_codes(db, clock, random, settings.codes) {}

net::HttpAnswer AccessApp::withCookie(net::HttpAnswer answer, const Session& session) const {
    std::string cookie = kCookie;
    cookie.append("=").append(session.token).append("; Path=/access; Max-Age=");
    cookie.append(std::to_string(static_cast<long>(AccessSessions::kLifetimeSeconds)));
    cookie.append("; HttpOnly; SameSite=Strict");
    if (m_settings.secureCookies)
        cookie.append("; Secure");
    answer.headers.emplace_back("Set-Cookie", cookie);
    return answer;
}

void AccessApp::handle(const net::HttpRequest& request, net::HttpReply reply) {
    if (request.method == "GET")
        return get(request, reply);
    if (request.method == "POST")
        return post(request, reply);
    reply(message(405, "Not allowed", "This page takes GET and POST only."));
}

void AccessApp::get(const net::HttpRequest& request, const net::HttpReply& reply) {
    const auto session = m_sessions.find(cookieValue(request.cookie, kCookie).value_or(""));
    if (request.path == "/access" || request.path == "/access/") {
        if (session && !session->email.empty())
            return reply(redirect("/access/request"));
        if (session)
            return reply(html(200, emailPage(session->csrf, {}, m_mailer.delivery())));
        const Session fresh = AccessSessions::anonymous();
        return reply(withCookie(html(200, emailPage(fresh.csrf, {}, m_mailer.delivery())), fresh));
    }
    if (request.path == "/access/verify") {
        if (!session || session->pendingEmail.empty())
            return reply(redirect("/access"));
        return reply(
            html(200, codePage(session->csrf, session->pendingEmail, {}, m_mailer.delivery())));
    }
    if (request.path == "/access/request") {
        if (!session || session->email.empty())
            return reply(redirect("/access"));
        return reply(requestPage(*session));
    }
    reply(message(404, "Not found", "There is no such page."));
}

void AccessApp::post(const net::HttpRequest& request, const net::HttpReply& reply) {
    if (request.contentType.rfind("application/x-www-form-urlencoded", 0) != 0)
        return reply(message(415, "Not a form", "This page takes form posts only."));
    auto fields = parseUrlEncoded(request.body);
    if (!fields)
        return reply(message(400, "Bad form", fields.error().message));
    const auto session = m_sessions.find(cookieValue(request.cookie, kCookie).value_or(""));
    const auto csrf = fieldValue(*fields, "csrf");
    if (!session || !csrf || !sameSecret(*csrf, session->csrf)) {
        std::string line = "access: refused a POST ";
        m_log.warn(line.append(request.path)
                       .append(" from ")
                       .append(request.peer)
                       .append(" without its session's CSRF token"));
        return reply(message(403, "Form expired",
                             "This form has expired or did not come from this site. Open the "
                             "page again and retry."));
    }
    if (request.path == "/access/code")
        return sendCode(request, *session, *fields, reply);
    if (request.path == "/access/verify")
        return reply(verifyCode(*session, *fields));
    if (request.path == "/access/sign-out") {
        (void)m_sessions.end(*session);
        return reply(redirect("/access"));
    }
    if (session->email.empty())
        return reply(redirect("/access"));
    if (request.path == "/access/request")
        return reply(submitRequest(*session, *fields));
    if (request.path == "/access/credential")
        return reply(showCredential(*session, request.host));
    reply(message(404, "Not found", "There is no such page."));
}

void AccessApp::sendCode(const net::HttpRequest& request, const Session& session,
                         const FormFields& fields, const net::HttpReply& reply) {
    std::vector<std::string> errors;
    const std::string typed = checkedText(fields, kEmailField, errors);
    if (!errors.empty())
        return reply(
            html(400, emailPage(session.csrf, PageNotes{errors, ""}, m_mailer.delivery())));
    auto email = normalizeEmail(typed);
    if (!email)
        return reply(html(
            400, emailPage(session.csrf, errorNote(email.error().message), m_mailer.delivery())));
    auto code = m_codes.issue(*email, request.peer);
    if (!code) {
        const unsigned status = code.error().code == ErrorCode::LimitExceeded ? 429 : 503;
        return reply(html(
            status, emailPage(session.csrf, errorNote(code.error().message), m_mailer.delivery())));
    }
    if (auto ok = m_sessions.setPendingEmail(session, *email); !ok)
        return reply(
            html(503, emailPage(session.csrf, errorNote(ok.error().message), m_mailer.delivery())));
    const int minutes = static_cast<int>(m_settings.codes.lifetimeSeconds / 60.0 + 0.5);
    // `done` runs on the mailer's thread: it touches only what it captured. The log line names
    // the address and where the code went, never the code (the log may be shared).
    m_mailer.send(CodeMail{*email, *code, minutes},
                  [reply, log = m_log, csrf = session.csrf, to = *email,
                   where = m_mailer.destination(),
                   delivery = m_mailer.delivery()](Expected<void> sent) {
                      if (sent) {
                          std::string line = "access: sign-in code for ";
                          log(line.append(to).append(" ").append(where));
                          return reply(redirect("/access/verify"));
                      }
                      std::string line = "access: could not send a sign-in code to ";
                      log.error(line.append(to).append(": ").append(sent.error().message));
                      reply(html(503, emailPage(csrf,
                                                errorNote("The node could not send the code; try "
                                                          "again later."),
                                                delivery)));
                  });
}

net::HttpAnswer AccessApp::verifyCode(const Session& session, const FormFields& fields) {
    if (session.pendingEmail.empty())
        return redirect("/access");
    const std::string code = fieldValue(fields, "code").value_or("").substr(0, 64);
    if (auto ok = m_codes.redeem(session.pendingEmail, code); !ok)
        return html(401, codePage(session.csrf, session.pendingEmail, errorNote(ok.error().message),
                                  m_mailer.delivery()));
    auto signedIn = m_sessions.signIn(session, session.pendingEmail);
    if (!signedIn)
        return message(503, "Unavailable", signedIn.error().message);
    return withCookie(redirect("/access/request"), *signedIn);
}

net::HttpAnswer AccessApp::submitRequest(const Session& session, const FormFields& fields) {
    if (auto latest = latestAccessRequest(m_db, session.email);
        latest && latest->state != "refused")
        return redirect("/access/request");
    const FormCheck check = checkAccessRequest(fields);
    if (!check.errors.empty()) {
        const auto refused = latestAccessRequest(m_db, session.email);
        return html(400,
                    requestFormPage(session.csrf, session.email, check.form,
                                    PageNotes{check.errors, ""}, refused ? &*refused : nullptr));
    }
    auto id = insertAccessRequest(m_db, session.email, check.form, m_clock());
    if (!id)
        return message(503, "Unavailable", id.error().message);
    std::string line = "access: request ";
    m_log(line.append(std::to_string(*id))
              .append(" from ")
              .append(session.email)
              .append(" (goblin-labnode requests show ")
              .append(std::to_string(*id))
              .append(")"));
    return redirect("/access/request");
}

net::HttpAnswer AccessApp::showCredential(const Session& session, const std::string& host) {
    const auto request = latestAccessRequest(m_db, session.email);
    if (!request || request->state != "approved" || request->credentialShownAt > 0)
        return redirect("/access/request");
    const double now = m_clock();
    // Created here, the first time it is asked for, so the node never holds the token itself:
    // the same path as `researcher add` (only the hash is stored).
    const std::string token = newSecret();
    if (auto id = issueResearcherCredential(m_db, session.email, hashSecret(token),
                                            CredentialChange::New, now);
        !id)
        return html(409,
                    requestStatusPage(session.csrf, *request, {}, errorNote(id.error().message)));
    auto marked = markCredentialShown(m_db, request->id, now);
    if (!marked || !*marked)
        return redirect("/access/request");
    std::string line = "access: credential of request ";
    m_log(line.append(std::to_string(request->id)).append(" shown to ").append(session.email));
    AccessRequest shown = *request;
    shown.credentialShownAt = now;
    return html(200, requestStatusPage(session.csrf, shown, {token, connectUrl(host)}, {}));
}

std::string AccessApp::connectUrl(const std::string& host) const {
    if (!m_settings.connectUrl.empty())
        return m_settings.connectUrl;
    if (!plausibleHost(host))
        return m_settings.fallbackUrl;
    std::string url = m_settings.secureCookies ? "wss://" : "ws://";
    return url.append(host);
}

net::HttpAnswer AccessApp::requestPage(const Session& session) {
    const auto latest = latestAccessRequest(m_db, session.email);
    if (!latest)
        return html(200, requestFormPage(session.csrf, session.email, {}, {}, nullptr));
    if (latest->state == "refused")
        return html(200, requestFormPage(session.csrf, session.email, {}, {}, &*latest));
    return html(200, requestStatusPage(session.csrf, *latest, {}, {}));
}

} // namespace goblin::labnode::access
