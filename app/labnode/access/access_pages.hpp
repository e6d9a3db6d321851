// The HTML of the access pages: sign-in (e-mail, then code), the request form, the request's
// status and the credential shown once, each under the data notice (data_notice.hpp). Every value
// is HTML-escaped; no scripts. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "access/access_form.hpp"
#include "access/access_requests.hpp"
#include "access/code_mailer.hpp"

namespace goblin::labnode::access {

struct PageNotes {
    std::vector<std::string> errors; // shown as a list in red
    std::string notice;              // one line of good news
};

// `delivery` says who receives the code: the researcher, or lab staff who pass it on.
std::string emailPage(const std::string& csrf, const PageNotes& notes, CodeDelivery delivery);
std::string codePage(const std::string& csrf, const std::string& pendingEmail,
                     const PageNotes& notes, CodeDelivery delivery);
// `typed` refills the form after a refusal.
std::string requestFormPage(const std::string& csrf, const std::string& email,
                            const AccessRequestForm& typed, const PageNotes& notes,
                            const AccessRequest* refused);
// The credential on the one answer that shows it (empty token otherwise), and the ws:// or wss://
// address the researcher passes to goblin.connect with it.
struct Credential {
    std::string token;
    std::string connectUrl;
};
std::string requestStatusPage(const std::string& csrf, const AccessRequest& request,
                              const Credential& credential, const PageNotes& notes);
// A short page for errors that are not about a form field (403, 404, 413).
std::string messagePage(const std::string& title, const std::string& text);

} // namespace goblin::labnode::access
