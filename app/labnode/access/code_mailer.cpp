#include "access/code_mailer.hpp"

#include <ctime>

#include <fcntl.h>
#include <unistd.h>

namespace goblin::labnode::access {
namespace {

std::string formatTime(double now, const char* format) {
    const auto seconds = static_cast<std::time_t>(now);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char text[64];
    std::strftime(text, sizeof text, format, &utc);
    return text;
}

} // namespace

std::string codeMailText(const CodeMail& mail, const std::string& from, double now) {
    std::string text = "Date: ";
    text.append(formatTime(now, "%a, %d %b %Y %H:%M:%S +0000")).append("\r\n");
    text.append("To: <").append(mail.to).append(">\r\n");
    text.append("From: <").append(from).append(">\r\n");
    text.append("Subject: Your GPU Goblin sign-in code\r\n");
    text.append("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n");
    text.append("Your sign-in code for the GPU Goblin lab node is ").append(mail.code);
    text.append("\r\n\r\nIt works once and expires in ");
    text.append(std::to_string(mail.minutesValid)).append(" minutes.\r\n");
    text.append("If you did not ask for it, ignore this mail.\r\n");
    return text;
}

FileCodeMailer::FileCodeMailer(std::filesystem::path file) : m_file(std::move(file)) {}

void FileCodeMailer::send(CodeMail mail, MailDone done) {
    std::string line = formatTime(static_cast<double>(std::time(nullptr)), "%Y-%m-%dT%H:%M:%SZ");
    line.append(" ").append(mail.to).append(" ").append(mail.code).append(" (valid ");
    line.append(std::to_string(mail.minutesValid)).append(" minutes)\n");
    std::lock_guard lock(m_mutex);
    const int fd = ::open(m_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        std::string message = "cannot write ";
        message.append(m_file.string());
        return done(makeError(ErrorCode::Internal, message));
    }
    const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    if (!written) {
        std::string message = "cannot write ";
        message.append(m_file.string());
        return done(makeError(ErrorCode::Internal, message));
    }
    done({});
}

std::string FileCodeMailer::describe() const {
    std::string text = "no SMTP relay (--smtp-url): sign-in codes are appended to ";
    return text.append(m_file.string());
}

std::string FileCodeMailer::destination() const {
    std::string text = "written to ";
    return text.append(m_file.string()).append(" for lab staff to pass on (no SMTP relay)");
}

} // namespace goblin::labnode::access
