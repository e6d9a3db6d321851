#include "access/access_pages.hpp"

#include <algorithm>

#include "access/data_notice.hpp"

#include "http/status_page.hpp"
#include "staff/human_format.hpp"

namespace goblin::labnode::access {
namespace {

std::string page(const std::string& title, const std::string& body) {
    std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
                      "<meta name=\"viewport\" content=\"width=device-width\"><title>";
    out.append(htmlEscape(title)).append(" · GPU Goblin</title>\n");
    out.append("<style>body{font-family:sans-serif;max-width:42em;margin:2em auto;padding:0 1em}"
               "label{display:block;margin-top:1em}input[type=text],input[type=email],textarea"
               "{width:100%;box-sizing:border-box}textarea{height:6em}.errors{color:#a00}"
               ".notice{color:#060}code#credential{font-size:1.2em;word-break:break-all}"
               ".data-notice{border-left:4px solid #c80;padding-left:.6em}"
               "</style></head>\n<body>\n<h1>");
    out.append(htmlEscape(title)).append("</h1>\n<p class=\"data-notice\" id=\"data-notice\">");
    out.append(htmlEscape(std::string(kDataNotice))).append("</p>\n");
    out.append(body).append("</body>\n</html>\n");
    return out;
}

void notesHtml(std::string& out, const PageNotes& notes) {
    if (!notes.errors.empty()) {
        out.append("<ul class=\"errors\" id=\"errors\">\n");
        for (const std::string& error : notes.errors)
            out.append("<li>").append(htmlEscape(error)).append("</li>\n");
        out.append("</ul>\n");
    }
    if (!notes.notice.empty())
        out.append("<p class=\"notice\" id=\"notice\">")
            .append(htmlEscape(notes.notice))
            .append("</p>\n");
}

void formStart(std::string& out, const std::string& action, const std::string& csrf) {
    out.append("<form method=\"post\" action=\"").append(action).append("\">\n");
    out.append("<input type=\"hidden\" name=\"csrf\" value=\"")
        .append(htmlEscape(csrf))
        .append("\">\n");
}

void textInput(std::string& out, const FieldLimit& field, const std::string& value) {
    const std::string name(field.name);
    out.append("<label for=\"").append(name).append("\">").append(htmlEscape(field.label));
    out.append(field.required ? "" : " (optional)").append("</label>\n");
    if (field.multiline) {
        out.append("<textarea id=\"").append(name).append("\" name=\"").append(name);
        out.append("\" maxlength=\"").append(std::to_string(field.maxBytes)).append("\">");
        out.append(htmlEscape(value)).append("</textarea>\n");
        return;
    }
    out.append("<input type=\"text\" id=\"").append(name).append("\" name=\"").append(name);
    out.append("\" maxlength=\"").append(std::to_string(field.maxBytes)).append("\" value=\"");
    out.append(htmlEscape(value)).append("\">\n");
}

void signOut(std::string& out, const std::string& csrf) {
    formStart(out, "/access/sign-out", csrf);
    out.append("<p><button type=\"submit\" id=\"sign-out\">Sign out</button></p>\n</form>\n");
}

void field(std::string& out, const std::string& id, const std::string& label,
           const std::string& value) {
    out.append("<dt>").append(htmlEscape(label)).append("</dt><dd id=\"").append(id).append("\">");
    out.append(htmlEscape(value)).append("</dd>\n");
}

} // namespace

std::string emailPage(const std::string& csrf, const PageNotes& notes, CodeDelivery delivery) {
    std::string body = "<p id=\"sign-in-intro\">Researchers ask this lab node for access here. "
                       "Sign in with your e-mail address: ";
    body.append(delivery == CodeDelivery::Mail
                    ? "we mail you a one-time code.</p>\n"
                    : "this node sends no mail, so the one-time code goes to the lab staff, who "
                      "pass it on to you.</p>\n");
    notesHtml(body, notes);
    formStart(body, "/access/code", csrf);
    textInput(body, kEmailField, "");
    body.append("<p><button type=\"submit\" id=\"send-code\">Send me a code</button></p>\n"
                "</form>\n");
    return page("Request access", body);
}

std::string codePage(const std::string& csrf, const std::string& pendingEmail,
                     const PageNotes& notes, CodeDelivery delivery) {
    std::string body = delivery == CodeDelivery::Mail
                           ? "<p id=\"code-sent\">We sent a one-time code to <strong "
                             "id=\"pending-email\">"
                           : "<p id=\"code-sent\">This node has no mail relay: the one-time code "
                             "for <strong id=\"pending-email\">";
    body.append(htmlEscape(pendingEmail));
    body.append(delivery == CodeDelivery::Mail
                    ? "</strong>. Type it here.</p>\n"
                    : "</strong> went to the lab staff, who pass it on to you. Ask them for it "
                      "and type it here.</p>\n");
    notesHtml(body, notes);
    formStart(body, "/access/verify", csrf);
    body.append("<label for=\"code\">Code</label>\n<input type=\"text\" id=\"code\" name=\"code\" "
                "maxlength=\"20\" autocomplete=\"one-time-code\" inputmode=\"numeric\">\n"
                "<p><button type=\"submit\" id=\"sign-in\">Sign in</button></p>\n</form>\n"
                "<p><a href=\"/access\">Use another address or ask for a new code</a></p>\n");
    return page("Sign in", body);
}

std::string requestFormPage(const std::string& csrf, const std::string& email,
                            const AccessRequestForm& typed, const PageNotes& notes,
                            const AccessRequest* refused) {
    std::string body = "<p>Signed in as <strong id=\"signed-in\">";
    body.append(htmlEscape(email)).append("</strong>.</p>\n");
    if (refused) {
        body.append("<p id=\"state\">Your request of ").append(utcTime(refused->createdAt));
        body.append(" was refused");
        if (!refused->staffNote.empty())
            body.append(": ").append(htmlEscape(refused->staffNote));
        body.append(". You may ask again.</p>\n");
    }
    body.append(
        "<p>Lab staff read this request and decide. We keep only what you type here.</p>\n");
    notesHtml(body, notes);
    formStart(body, "/access/request", csrf);
    textInput(body, kNameField, typed.name);
    textInput(body, kInstitutionField, typed.institution);
    textInput(body, kPurposeField, typed.purpose);
    body.append("<fieldset><legend>Computation types needed</legend>\n");
    for (const std::string_view kind : kComputations) {
        const std::string name(kind);
        const bool ticked = std::find(typed.computations.begin(), typed.computations.end(), name) !=
                            typed.computations.end();
        body.append("<label><input type=\"checkbox\" name=\"computation\" id=\"computation-");
        body.append(name).append("\" value=\"").append(name).append("\"");
        body.append(ticked ? " checked" : "").append("> ").append(name).append("</label>\n");
    }
    body.append("</fieldset>\n");
    textInput(body, kNeedsField, typed.needs);
    textInput(body, kScaleField, typed.scale);
    body.append("<p><button type=\"submit\" id=\"submit-request\">Send the request</button></p>\n"
                "</form>\n");
    signOut(body, csrf);
    return page("Access request", body);
}

std::string requestStatusPage(const std::string& csrf, const AccessRequest& request,
                              const Credential& credential, const PageNotes& notes) {
    std::string body = "<p>Signed in as <strong id=\"signed-in\">";
    body.append(htmlEscape(request.email)).append("</strong>.</p>\n");
    notesHtml(body, notes);
    body.append("<p>Request ").append(std::to_string(request.id)).append(" of ");
    body.append(utcTime(request.createdAt)).append(": <strong id=\"state\">");
    body.append(htmlEscape(request.state)).append("</strong></p>\n");
    if (!credential.token.empty()) {
        body.append("<p>Your credential (the token for <code>goblin.connect(url, token=…)</code>)."
                    " Copy it now: it is shown this once, and the node keeps only its hash.</p>\n"
                    "<p><code id=\"credential\">");
        body.append(htmlEscape(credential.token)).append("</code></p>\n");
        body.append("<p>The address of this node, the <code>url</code> to pass to "
                    "<code>goblin.connect</code>: <code id=\"connect-url\">");
        body.append(htmlEscape(credential.connectUrl)).append("</code></p>\n<pre><code id=\"");
        body.append("connect-example\">import goblin\nclient = goblin.connect(\"");
        body.append(htmlEscape(credential.connectUrl)).append("\", token=\"");
        body.append(htmlEscape(credential.token)).append("\")</code></pre>\n");
    } else if (request.state == "approved" && request.credentialShownAt > 0) {
        body.append("<p id=\"credential-shown\">Your credential was shown on ");
        body.append(utcTime(request.credentialShownAt));
        body.append(". If you lost it, ask lab staff for a new one.</p>\n");
    } else if (request.state == "approved") {
        body.append("<p>Lab staff approved your request. Your credential is shown once: have a "
                    "safe place ready.</p>\n");
        formStart(body, "/access/credential", csrf);
        body.append("<p><button type=\"submit\" id=\"show-credential\">Show my credential"
                    "</button></p>\n</form>\n");
    } else if (request.state == "pending") {
        body.append("<p>Lab staff have not decided yet. Come back to this page later.</p>\n");
    }
    body.append("<dl>\n");
    field(body, "field-name", "Name", request.form.name);
    field(body, "field-institution", "Institution", request.form.institution);
    field(body, "field-purpose", "Research purpose", request.form.purpose);
    field(body, "field-computations", "Computation types",
          joinComputations(request.form.computations));
    field(body, "field-needs", "What your research needs", request.form.needs);
    field(body, "field-scale", "Expected scale", request.form.scale);
    body.append("</dl>\n");
    signOut(body, csrf);
    return page("Access request", body);
}

std::string messagePage(const std::string& title, const std::string& text) {
    std::string body = "<p id=\"message\">";
    body.append(htmlEscape(text))
        .append("</p>\n<p><a href=\"/access\">Back to the start</a></p>\n");
    return page(title, body);
}

} // namespace goblin::labnode::access
