// Tests of researcher_book on a real SQLite file: one active credential per e-mail, --rotate
// replaces it, a revoked credential stops authenticating.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <string>

#include "store/node_store.hpp"
#include "store/researcher_book.hpp"

using goblin::ErrorCode;
using goblin::labnode::CredentialChange;
using goblin::labnode::issueResearcherCredential;
using goblin::labnode::listResearchers;
using goblin::labnode::NodeStore;
using goblin::labnode::revokeResearcher;

class TestResearcherBook : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void secondCredentialIsRefusedUnlessRotated() {
        QTemporaryDir dir;
        NodeStore store(dir.filePath("node.db").toStdString());
        auto first = issueResearcherCredential(store.database(), "ada@lab.example", "hash-1",
                                               CredentialChange::New, 100.0);
        QVERIFY(first.has_value());
        auto again = issueResearcherCredential(store.database(), "ada@lab.example", "hash-2",
                                               CredentialChange::New, 101.0);
        QVERIFY(!again.has_value());
        QVERIFY(again.error().message.find("--rotate") != std::string::npos);
        QCOMPARE(store.researcherByTokenHash("hash-1"), std::optional<std::int64_t>(*first));
        QVERIFY(!store.researcherByTokenHash("hash-2"));

        auto rotated = issueResearcherCredential(store.database(), "ada@lab.example", "hash-3",
                                                 CredentialChange::Rotate, 102.0);
        QVERIFY(rotated.has_value());
        QCOMPARE(*rotated, *first);
        QVERIFY(!store.researcherByTokenHash("hash-1"));
        QCOMPARE(store.researcherByTokenHash("hash-3"), std::optional<std::int64_t>(*first));
    }

    void revokedCredentialStopsAuthenticating() {
        QTemporaryDir dir;
        NodeStore store(dir.filePath("node.db").toStdString());
        QVERIFY(issueResearcherCredential(store.database(), "ada@lab.example", "hash-a",
                                          CredentialChange::New, 100.0));
        QVERIFY(issueResearcherCredential(store.database(), "bob@lab.example", "hash-b",
                                          CredentialChange::New, 200.0));
        QVERIFY(revokeResearcher(store.database(), "ada@lab.example", 300.0));
        QVERIFY(!store.researcherByTokenHash("hash-a"));
        QVERIFY(store.researcherByTokenHash("hash-b"));

        const auto listing = listResearchers(store.database());
        QCOMPARE(listing.size(), std::size_t{2});
        QCOMPARE(listing[0].email, std::string("ada@lab.example"));
        QVERIFY(!listing[0].active);
        QCOMPARE(listing[0].revokedAt, 300.0);
        QCOMPARE(listing[0].createdAt, 100.0);
        QVERIFY(listing[1].active);

        // A revoked researcher may be given a new credential without --rotate.
        QVERIFY(issueResearcherCredential(store.database(), "ada@lab.example", "hash-a2",
                                          CredentialChange::New, 400.0));
        QVERIFY(store.researcherByTokenHash("hash-a2"));
        QVERIFY(listResearchers(store.database())[0].active);
    }

    void revokingAnUnknownResearcherIsNotFound() {
        QTemporaryDir dir;
        NodeStore store(dir.filePath("node.db").toStdString());
        auto revoked = revokeResearcher(store.database(), "nobody@lab.example", 1.0);
        QVERIFY(!revoked.has_value());
        QCOMPARE(revoked.error().code, ErrorCode::NotFound);
    }
};

QTEST_APPLESS_MAIN(TestResearcherBook)
#include "test_researcher_book.moc"
