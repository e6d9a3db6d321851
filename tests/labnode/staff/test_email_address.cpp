// Tests of normalizeEmail: addresses staff type are accepted (lower-cased), typos refused
// with the reason.
#include <QtTest/QtTest>

#include <string>

#include "staff/email_address.hpp"

using goblin::labnode::normalizeEmail;

class TestEmailAddress : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void accepts_data() {
        QTest::addColumn<QString>("address");
        QTest::addColumn<QString>("normalized");
        QTest::newRow("plain") << "ada@lab.example"
                               << "ada@lab.example";
        QTest::newRow("domain case") << "Ada.Lovelace@Lab.Example.ORG"
                                     << "ada.lovelace@lab.example.org";
        QTest::newRow("plus tag") << "ada+goblin@lab-1.example"
                                  << "ada+goblin@lab-1.example";
        QTest::newRow("atom chars") << "o'neil_j{x}@a.io"
                                    << "o'neil_j{x}@a.io";
    }
    void accepts() {
        QFETCH(QString, address);
        QFETCH(QString, normalized);
        auto result = normalizeEmail(address.toStdString());
        QVERIFY2(result.has_value(), result ? "" : result.error().message.c_str());
        QCOMPARE(QString::fromStdString(*result), normalized);
    }

    void refuses_data() {
        QTest::addColumn<QString>("address");
        QTest::newRow("empty") << "";
        QTest::newRow("no at") << "ada.lab.example";
        QTest::newRow("two ats") << "ada@lab@example.org";
        QTest::newRow("no local") << "@lab.example";
        QTest::newRow("no domain") << "ada@";
        QTest::newRow("no dot") << "ada@localhost";
        QTest::newRow("double dot local") << "ada..l@lab.example";
        QTest::newRow("leading dot") << ".ada@lab.example";
        QTest::newRow("trailing dot domain") << "ada@lab.example.";
        QTest::newRow("empty label") << "ada@lab..example";
        QTest::newRow("space") << "ada lovelace@lab.example";
        QTest::newRow("comma typo") << "ada@lab,example";
        QTest::newRow("hyphen label") << "ada@-lab.example";
        QTest::newRow("hyphen end") << "ada@lab-.example";
        QTest::newRow("too long") << QString(250, 'a') + "@b.example";
        QTest::newRow("local too long") << QString(65, 'a') + "@b.example";
    }
    void refuses() {
        QFETCH(QString, address);
        auto result = normalizeEmail(address.toStdString());
        QVERIFY2(!result.has_value(), qPrintable(address));
        QVERIFY(result.error().message.find("is not an e-mail address") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestEmailAddress)
#include "test_email_address.moc"
