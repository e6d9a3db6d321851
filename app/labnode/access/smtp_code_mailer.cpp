#include "access/smtp_code_mailer.hpp"

#include <ctime>
#include <stdexcept>

#include <boost/asio/post.hpp>
#include <curl/curl.h>

namespace goblin::labnode::access {
namespace {

struct Upload {
    const std::string& text;
    std::size_t offset = 0;
};

std::size_t readUpload(char* buffer, std::size_t size, std::size_t count, void* user) {
    auto* upload = static_cast<Upload*>(user);
    const std::size_t left = upload->text.size() - upload->offset;
    const std::size_t n = std::min(left, size * count);
    upload->text.copy(buffer, n, upload->offset);
    upload->offset += n;
    return n;
}

// The URL without the user:password part, for logs and error messages.
std::string withoutCredentials(const std::string& url) {
    const auto scheme = url.find("://");
    const auto at = url.find('@');
    if (scheme == std::string::npos || at == std::string::npos || at < scheme)
        return url;
    std::string shown = url.substr(0, scheme + 3);
    return shown.append(url.substr(at + 1));
}

} // namespace

SmtpCodeMailer::SmtpCodeMailer(std::string url, std::string from)
    : m_url(std::move(url)), m_from(std::move(from)) {
    if (m_url.rfind("smtp://", 0) != 0 && m_url.rfind("smtps://", 0) != 0)
        throw std::invalid_argument("--smtp-url must start with smtp:// or smtps://");
    if (m_from.empty() || m_from.find_first_of("<>\r\n ") != std::string::npos)
        throw std::invalid_argument("--smtp-from must be a plain e-mail address");
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

SmtpCodeMailer::~SmtpCodeMailer() {
    m_thread.join();
    curl_global_cleanup();
}

void SmtpCodeMailer::send(CodeMail mail, MailDone done) {
    boost::asio::post(
        m_thread, [this, mail = std::move(mail), done = std::move(done)] { done(deliver(mail)); });
}

std::string SmtpCodeMailer::describe() const {
    std::string text = "sign-in codes are mailed through the SMTP relay ";
    return text.append(withoutCredentials(m_url)).append(" from ").append(m_from);
}

std::string SmtpCodeMailer::destination() const {
    std::string text = "mailed through the SMTP relay ";
    return text.append(withoutCredentials(m_url));
}

Expected<void> SmtpCodeMailer::deliver(const CodeMail& mail) const {
    CURL* curl = curl_easy_init();
    if (!curl)
        return makeError(ErrorCode::Internal, "libcurl could not start");
    const std::string text = codeMailText(mail, m_from, static_cast<double>(std::time(nullptr)));
    Upload upload{text};
    std::string from = "<";
    from.append(m_from).append(">");
    std::string to = "<";
    to.append(mail.to).append(">");
    curl_slist* recipients = curl_slist_append(nullptr, to.c_str());
    curl_easy_setopt(curl, CURLOPT_URL, m_url.c_str());
    curl_easy_setopt(curl, CURLOPT_MAIL_FROM, from.c_str());
    curl_easy_setopt(curl, CURLOPT_MAIL_RCPT, recipients);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, readUpload);
    curl_easy_setopt(curl, CURLOPT_READDATA, &upload);
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_TRY));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    // Under the HTTP session's own timeout, so the researcher's page still gets its answer.
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 4L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 8L);
    const CURLcode result = curl_easy_perform(curl);
    curl_slist_free_all(recipients);
    curl_easy_cleanup(curl);
    if (result != CURLE_OK) {
        std::string message = "SMTP relay ";
        message.append(withoutCredentials(m_url)).append(": ").append(curl_easy_strerror(result));
        return makeError(ErrorCode::Internal, message);
    }
    return {};
}

} // namespace goblin::labnode::access
