// The access-request web app on the node's HTTP port (/access…): sign in with an e-mail address and
// a mailed one-time code, fill in the access request, follow its status, see the credential once
// after staff approved it. Sessions ride in an HttpOnly, SameSite=Strict cookie (Secure over TLS)
// and every POST carries the session's CSRF token. Lives on the core thread, with the database.
#pragma once

#include <string>

#include "access/access_sessions.hpp"
#include "access/code_mailer.hpp"
#include "access/form_encoding.hpp"
#include "access/sign_in_codes.hpp"
#include "goblin/net/ws_server.hpp"

namespace goblin::labnode::access {

struct AccessSettings {
    bool secureCookies = false; // the node serves https:// (and wss://)
    CodeSettings codes;
    // The address the credential page gives for goblin.connect: `connectUrl` when set (the
    // node's public URL, or the one address it listens on); otherwise built from the request's
    // Host field (ws:// or wss:// after secureCookies), or `fallbackUrl` without a usable one.
    std::string connectUrl;
    std::string fallbackUrl;
};

class AccessApp {
public:
    AccessApp(Database& db, Clock clock, core::RandomSource& random, CodeMailer& mailer,
              NodeLog log, AccessSettings settings);

    static bool handles(const std::string& path) {
        return path == "/access" || path.rfind("/access/", 0) == 0;
    }
    // Answers through `reply`, at once or (sending a code) once the mailer is done.
    void handle(const net::HttpRequest& request, net::HttpReply reply);

private:
    void get(const net::HttpRequest& request, const net::HttpReply& reply);
    void post(const net::HttpRequest& request, const net::HttpReply& reply);
    void sendCode(const net::HttpRequest& request, const Session& session, const FormFields& fields,
                  const net::HttpReply& reply);
    net::HttpAnswer verifyCode(const Session& session, const FormFields& fields);
    net::HttpAnswer submitRequest(const Session& session, const FormFields& fields);
    net::HttpAnswer showCredential(const Session& session, const std::string& host);
    std::string connectUrl(const std::string& host) const;
    net::HttpAnswer requestPage(const Session& session);
    net::HttpAnswer withCookie(net::HttpAnswer answer, const Session& session) const;

    Database& m_db;
    Clock m_clock;
    CodeMailer& m_mailer;
    NodeLog m_log;
    AccessSettings m_settings;
    AccessSessions m_sessions;
    SignInCodes m_codes;
};

} // namespace goblin::labnode::access
