// How sign-in codes reach researchers: through the SMTP relay named by `serve --smtp-url`
// (SmtpCodeMailer, smtp_code_mailer.hpp) or, with none configured, appended to a file in the data
// folder that lab staff read and pass on (FileCodeMailer). Called on the core thread; `done` runs
// on the mailer's own thread (or at once), never the core thread's.
#pragma once

#include <filesystem>
#include <functional>
#include <mutex>
#include <string>

#include "goblin/core/error.hpp"

namespace goblin::labnode::access {

struct CodeMail {
    std::string to; // a normalized e-mail address (no spaces, no line breaks)
    std::string code;
    int minutesValid = 15;
};

using MailDone = std::function<void(Expected<void>)>;

// Who receives a sign-in code: the researcher (mailed) or lab staff, who pass it on.
enum class CodeDelivery { Mail, Staff };

class CodeMailer {
public:
    virtual ~CodeMailer() = default;
    virtual void send(CodeMail mail, MailDone done) = 0;
    // "SMTP relay smtp://…" or "file /var/lib/…/access-codes.txt", for the log.
    virtual std::string describe() const = 0;
    virtual CodeDelivery delivery() const { return CodeDelivery::Mail; }
    // Where one code went, for the node's log line of each code ("mailed through …", "written
    // to …"); never the code itself.
    virtual std::string destination() const { return describe(); }
};

// The mail's text (headers and body), as sent over SMTP.
std::string codeMailText(const CodeMail& mail, const std::string& from, double now);

class FileCodeMailer final : public CodeMailer {
public:
    // The file is created readable by the node's user only.
    explicit FileCodeMailer(std::filesystem::path file);
    void send(CodeMail mail, MailDone done) override;
    std::string describe() const override;
    CodeDelivery delivery() const override { return CodeDelivery::Staff; }
    std::string destination() const override;

private:
    std::filesystem::path m_file;
    std::mutex m_mutex;
};

// Where FileCodeMailer writes in a data folder.
inline constexpr const char* kCodeFileName = "access-codes.txt";

} // namespace goblin::labnode::access
