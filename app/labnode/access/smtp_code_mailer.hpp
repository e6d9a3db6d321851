// Sends sign-in codes through an SMTP relay with libcurl (smtp:// with STARTTLS when the relay
// offers it, or smtps://; credentials may ride in the URL). One thread of its own sends the mails,
// one at a time, so a slow relay never holds the core thread or the worker pool.
#pragma once

#include <boost/asio/thread_pool.hpp>

#include "access/code_mailer.hpp"

namespace goblin::labnode::access {

class SmtpCodeMailer final : public CodeMailer {
public:
    // Throws std::invalid_argument for a URL that is not smtp:// or smtps://.
    SmtpCodeMailer(std::string url, std::string from);
    ~SmtpCodeMailer() override;
    SmtpCodeMailer(const SmtpCodeMailer&) = delete;
    SmtpCodeMailer& operator=(const SmtpCodeMailer&) = delete;

    void send(CodeMail mail, MailDone done) override;
    std::string describe() const override;
    std::string destination() const override;

private:
    Expected<void> deliver(const CodeMail& mail) const;

    std::string m_url;
    std::string m_from;
    boost::asio::thread_pool m_thread{1};
};

} // namespace goblin::labnode::access
