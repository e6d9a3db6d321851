// Tests of the access pages' pure pieces: form and cookie decoding, the request form's
// validation (limits, required fields, control characters, UTF-8, computation types), HTML
// escaping of hostile values on every page, and terminal-safe text for `requests show`.
#include <QtTest/QtTest>

#include <string>

#include "access/access_form.hpp"
#include "access/access_pages.hpp"
#include "access/data_notice.hpp"
#include "access/form_encoding.hpp"
#include "access/terminal_text.hpp"

using namespace goblin::labnode::access;

namespace {

FormFields validFields() {
    return {{"name", "Ada Lovelace"},
            {"institution", "Analytical Lab"},
            {"purpose", "Bernoulli numbers\nat scale"},
            {"computation", "matmul"},
            {"computation", "training"},
            {"needs", ""},
            {"scale", "10 GFLOP a day"}};
}

FormFields with(FormFields fields, const std::string& name, const std::string& value) {
    for (auto& [key, old] : fields)
        if (key == name)
            old = value;
    return fields;
}

bool mentions(const std::vector<std::string>& errors, const std::string& text) {
    return std::any_of(errors.begin(), errors.end(), [&](const std::string& error) {
        return error.find(text) != std::string::npos;
    });
}

const std::string kScript = "<script>alert('x')</script>\"&";

} // namespace

class TestAccessForm : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void decodesUrlEncodedForms() {
        auto fields = parseUrlEncoded("a=1+2&b=%3Cp%3E%26&c&&d=%E2%9C%93&a=3");
        QVERIFY(fields.has_value());
        QCOMPARE(fieldValue(*fields, "a").value_or(""), std::string("1 2"));
        QCOMPARE(fieldValue(*fields, "b").value_or(""), std::string("<p>&"));
        QCOMPARE(fieldValue(*fields, "c").value_or("absent"), std::string(""));
        QCOMPARE(fieldValue(*fields, "d").value_or(""), std::string("\xE2\x9C\x93"));
        QCOMPARE(fieldValues(*fields, "a"), (std::vector<std::string>{"1 2", "3"}));
        QVERIFY(!fieldValue(*fields, "e"));
        QVERIFY(!parseUrlEncoded("a=%4").has_value());
        QVERIFY(!parseUrlEncoded("a=%zz").has_value());
        QVERIFY(!parseUrlEncoded("a=%").has_value());
    }

    void readsCookies() {
        QCOMPARE(cookieValue("a=1; goblin_access=tok; b=2", "goblin_access").value_or(""),
                 std::string("tok"));
        QCOMPARE(cookieValue("goblin_access=x", "goblin_access").value_or(""), std::string("x"));
        QVERIFY(!cookieValue("xgoblin_access=1", "goblin_access"));
        QVERIFY(!cookieValue("", "goblin_access"));
    }

    void acceptsAValidRequest() {
        const FormCheck check = checkAccessRequest(validFields());
        QVERIFY2(check.errors.empty(), check.errors.empty() ? "" : check.errors[0].c_str());
        QCOMPARE(check.form.name, std::string("Ada Lovelace"));
        QCOMPARE(check.form.purpose, std::string("Bernoulli numbers\nat scale"));
        QCOMPARE(check.form.computations, (std::vector<std::string>{"matmul", "training"}));
    }

    void refusesAFieldOverItsLimitSayingWhich() {
        const FormCheck check = checkAccessRequest(
            with(validFields(), "name", std::string(kNameField.maxBytes + 1, 'a')));
        QCOMPARE(check.errors.size(), std::size_t{1});
        QVERIFY(mentions(check.errors, "Name: at most 200 bytes (got 201)"));
        const FormCheck atLimit =
            checkAccessRequest(with(validFields(), "name", std::string(kNameField.maxBytes, 'a')));
        QVERIFY(atLimit.errors.empty());
        const FormCheck purpose = checkAccessRequest(
            with(validFields(), "purpose", std::string(kPurposeField.maxBytes + 1, 'p')));
        QVERIFY(mentions(purpose.errors, "Research purpose: at most 4000 bytes"));
    }

    void refusesMissingRequiredFields() {
        FormFields fields = with(validFields(), "institution", "   ");
        fields.erase(std::remove_if(fields.begin(), fields.end(),
                                    [](const auto& field) { return field.first == "scale"; }),
                     fields.end());
        const FormCheck check = checkAccessRequest(fields);
        QVERIFY(mentions(check.errors, "Institution: required"));
        QVERIFY(mentions(check.errors, "Expected scale: required"));
    }

    void refusesControlCharactersAndBadUtf8() {
        QVERIFY(mentions(checkAccessRequest(with(validFields(), "name", "Ada\nLovelace")).errors,
                         "Name: one line"));
        QVERIFY(mentions(checkAccessRequest(with(validFields(), "purpose", "a\x1b[31mred")).errors,
                         "control characters"));
        QVERIFY(
            mentions(checkAccessRequest(with(validFields(), "scale", "\xC0\xAF")).errors, "UTF-8"));
        QVERIFY(mentions(checkAccessRequest(with(validFields(), "scale", "\xED\xA0\x80")).errors,
                         "UTF-8"));
        QVERIFY(checkAccessRequest(with(validFields(), "name", "Ada Lovelace \xC3\xA9"))
                    .errors.empty());
    }

    void computationTypesAreKnownOnesOrTheFreeField() {
        QVERIFY(mentions(checkAccessRequest(with(validFields(), "computation", "bitcoin")).errors,
                         "unknown type"));
        FormFields none;
        for (const auto& field : validFields())
            if (field.first != "computation")
                none.push_back(field);
        QVERIFY(mentions(checkAccessRequest(none).errors, "tick at least one"));
        const FormCheck needs = checkAccessRequest(with(none, "needs", "sparse solvers"));
        QVERIFY(needs.errors.empty());
        QCOMPARE(needs.form.needs, std::string("sparse solvers"));
    }

    void everyPageEscapesHostileValues() {
        AccessRequest request;
        request.id = 7;
        request.email = "ada@lab.example";
        request.form = {kScript, kScript, kScript, {"matmul"}, kScript, kScript};
        request.state = "refused";
        request.staffNote = kScript;
        const std::string pages[] = {
            requestStatusPage(kScript, request, {kScript, kScript}, PageNotes{{kScript}, kScript}),
            requestFormPage(kScript, kScript, request.form, PageNotes{{kScript}, ""}, &request),
            codePage(kScript, kScript, PageNotes{{kScript}, ""}, CodeDelivery::Mail),
            codePage(kScript, kScript, PageNotes{{kScript}, ""}, CodeDelivery::Staff),
            emailPage(kScript, PageNotes{{kScript}, ""}, CodeDelivery::Staff),
            messagePage(kScript, kScript),
        };
        for (const std::string& html : pages) {
            QVERIFY2(html.find("<script") == std::string::npos, html.c_str());
            QVERIFY(html.find("alert('x')") == std::string::npos);
            QVERIFY(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;") !=
                    std::string::npos);
        }
    }

    void theStatusPageShowsTheCredentialOnlyWhenGiven() {
        AccessRequest request;
        request.id = 1;
        request.email = "ada@lab.example";
        request.state = "approved";
        const std::string before = requestStatusPage("c", request, {}, {});
        QVERIFY(before.find("id=\"show-credential\"") != std::string::npos);
        QVERIFY(before.find("id=\"credential\"") == std::string::npos);
        const std::string once =
            requestStatusPage("c", request, {"tok123", "wss://goblin.lab.example:7000"}, {});
        QVERIFY(once.find("<code id=\"credential\">tok123</code>") != std::string::npos);
        QVERIFY(once.find("<code id=\"connect-url\">wss://goblin.lab.example:7000</code>") !=
                std::string::npos);
        QVERIFY(once.find("goblin.connect(\"wss://goblin.lab.example:7000\", "
                          "token=\"tok123\")") != std::string::npos);
        request.credentialShownAt = 1'800'000'000.0;
        const std::string after = requestStatusPage("c", request, {}, {});
        QVERIFY(after.find("id=\"credential-shown\"") != std::string::npos);
        QVERIFY(after.find("show-credential") == std::string::npos);
    }

    void everyPageShowsTheDataNoticeAndWhoGetsTheCode() {
        AccessRequest request;
        request.email = "ada@lab.example";
        request.state = "pending";
        const std::string notice =
            "<p class=\"data-notice\" id=\"data-notice\">" + std::string(kDataNotice) + "</p>";
        for (const std::string& html :
             {emailPage("c", {}, CodeDelivery::Mail),
              codePage("c", "a@b.c", {}, CodeDelivery::Staff),
              requestFormPage("c", "a@b.c", {}, {}, nullptr),
              requestStatusPage("c", request, {"t", "ws://h:1"}, {}), messagePage("t", "x")})
            QVERIFY2(html.find(notice) != std::string::npos, html.c_str());
        const std::string mailed = codePage("c", "a@b.c", {}, CodeDelivery::Mail);
        QVERIFY(mailed.find("We sent a one-time code") != std::string::npos);
        QVERIFY(mailed.find("lab staff") == std::string::npos);
        const std::string staff = codePage("c", "a@b.c", {}, CodeDelivery::Staff);
        QVERIFY(staff.find("We sent") == std::string::npos);
        QVERIFY(staff.find("went to the lab staff, who pass it on to you") != std::string::npos);
        QVERIFY(emailPage("c", {}, CodeDelivery::Staff).find("we mail you") == std::string::npos);
    }

    void terminalSafeTextShowsEscapes() {
        QCOMPARE(terminalSafe("a\x1b[2Jb\x7f\nc\td"), std::string("a\\x1b[2Jb\\x7f\nc\td"));
        QCOMPARE(terminalSafe(kScript), kScript);
    }
};

QTEST_APPLESS_MAIN(TestAccessForm)
#include "test_access_form.moc"
