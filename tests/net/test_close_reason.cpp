// Tests of close codes and reasons (docs/protocol.md, "Error codes").
#include <QtTest/QtTest>

#include <cstdint>
#include <string>
#include <vector>

#include "goblin/net/close_reason.hpp"

using goblin::Error;
using goblin::ErrorCode;
using goblin::net::closeCodeFor;
using goblin::net::closeErrorFromPeer;
using goblin::net::closeReasonFor;

namespace {

constexpr std::size_t kMaxReason = 123;

const std::vector<ErrorCode> kAllCodes = {
    ErrorCode::InvalidFrame,     ErrorCode::InvalidMessage,     ErrorCode::LimitExceeded,
    ErrorCode::UnsupportedDtype, ErrorCode::ShapeMismatch,      ErrorCode::InvalidInput,
    ErrorCode::VersionMismatch,  ErrorCode::Unauthenticated,    ErrorCode::Banned,
    ErrorCode::NotFound,         ErrorCode::VerificationFailed, ErrorCode::Timeout,
    ErrorCode::Internal,
};

// True when text is complete, well-formed UTF-8 (no sequence cut short).
bool isValidUtf8(const std::string& text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto lead = static_cast<unsigned char>(text[i]);
        std::size_t length = 0;
        if (lead < 0x80)
            length = 1;
        else if ((lead & 0xE0) == 0xC0)
            length = 2;
        else if ((lead & 0xF0) == 0xE0)
            length = 3;
        else if ((lead & 0xF8) == 0xF0)
            length = 4;
        else
            return false;
        if (i + length > text.size())
            return false;
        for (std::size_t j = 1; j < length; ++j) {
            if ((static_cast<unsigned char>(text[i + j]) & 0xC0) != 0x80)
                return false;
        }
        i += length;
    }
    return true;
}

} // namespace

class TestCloseReason : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void closeCodesFollowProtocol();
    void shortReasonIsComplete();
    void longAsciiReasonIsCut();
    void reasonNeverSplitsUtf8_data();
    void reasonNeverSplitsUtf8();
    void peerReasonWithCodePrefix();
    void peerReasonFallsBackOnCloseCode();
    void peerReasonWithUnknownPrefix();
    void roundTripEveryCode();
};

void TestCloseReason::closeCodesFollowProtocol() {
    QCOMPARE(closeCodeFor(ErrorCode::Unauthenticated), std::uint16_t{4001});
    QCOMPARE(closeCodeFor(ErrorCode::VersionMismatch), std::uint16_t{4002});
    QCOMPARE(closeCodeFor(ErrorCode::Banned), std::uint16_t{4003});
    QCOMPARE(closeCodeFor(ErrorCode::InvalidFrame), std::uint16_t{1002});
    QCOMPARE(closeCodeFor(ErrorCode::InvalidMessage), std::uint16_t{1002});
    QCOMPARE(closeCodeFor(ErrorCode::LimitExceeded), std::uint16_t{1009});
    QCOMPARE(closeCodeFor(ErrorCode::Internal), std::uint16_t{1011});
    // Codes the protocol gives no close code of their own must never look like a normal close.
    for (ErrorCode code : kAllCodes)
        QVERIFY(closeCodeFor(code) != 1000);
}

void TestCloseReason::shortReasonIsComplete() {
    QCOMPARE(closeReasonFor(Error{ErrorCode::InvalidFrame, "bad crc"}),
             std::string("invalid_frame: bad crc"));
    QCOMPARE(closeReasonFor(Error{ErrorCode::Unauthenticated, "wrong token"}),
             std::string("unauthenticated: wrong token"));
}

void TestCloseReason::longAsciiReasonIsCut() {
    const std::string message(500, 'm');
    const std::string reason = closeReasonFor(Error{ErrorCode::LimitExceeded, message});
    QCOMPARE(reason.size(), kMaxReason);
    QVERIFY(reason.starts_with("limit_exceeded: mmm"));
    // Exactly at the limit nothing is cut.
    const std::string prefix = "internal: ";
    const std::string fits(kMaxReason - prefix.size(), 'z');
    QCOMPARE(closeReasonFor(Error{ErrorCode::Internal, fits}), prefix + fits);
}

void TestCloseReason::reasonNeverSplitsUtf8_data() {
    QTest::addColumn<QByteArray>("character");
    QTest::newRow("2 bytes") << QByteArray("\xC3\xA9");         // é
    QTest::newRow("3 bytes") << QByteArray("\xE2\x82\xAC");     // €
    QTest::newRow("4 bytes") << QByteArray("\xF0\x9F\x98\x80"); // 😀
}

void TestCloseReason::reasonNeverSplitsUtf8() {
    QFETCH(QByteArray, character);
    const std::string glyph(character.constData(), static_cast<std::size_t>(character.size()));
    // Shift the multi-byte characters across the cut point by every offset.
    for (std::size_t shift = 0; shift < 8; ++shift) {
        std::string message(shift, 'a');
        while (message.size() < 300)
            message += glyph;
        const Error error{ErrorCode::InvalidMessage, message};
        const std::string full = error.describe();
        const std::string reason = closeReasonFor(error);
        QVERIFY2(reason.size() <= kMaxReason, qPrintable(QString::number(reason.size())));
        QVERIFY2(reason.size() > kMaxReason - glyph.size(), "cut more than one character");
        QVERIFY2(isValidUtf8(reason), qPrintable(QStringLiteral("shift %1").arg(shift)));
        QCOMPARE(full.substr(0, reason.size()), reason);
    }
}

void TestCloseReason::peerReasonWithCodePrefix() {
    const Error error = closeErrorFromPeer(1002, "invalid_frame: crc mismatch");
    QCOMPARE(error.code, ErrorCode::InvalidFrame);
    QCOMPARE(error.message, std::string("crc mismatch"));
    // The prefix wins over the close code.
    QCOMPARE(closeErrorFromPeer(1011, "banned: staff said so").code, ErrorCode::Banned);
    QCOMPARE(closeErrorFromPeer(1002, "not_found:x").message, std::string("x"));
    QCOMPARE(closeErrorFromPeer(1002, "not_found:x").code, ErrorCode::NotFound);
}

void TestCloseReason::peerReasonFallsBackOnCloseCode() {
    QCOMPARE(closeErrorFromPeer(4001, "").code, ErrorCode::Unauthenticated);
    QCOMPARE(closeErrorFromPeer(4002, "").code, ErrorCode::VersionMismatch);
    QCOMPARE(closeErrorFromPeer(4003, "").code, ErrorCode::Banned);
    QCOMPARE(closeErrorFromPeer(1009, "").code, ErrorCode::LimitExceeded);
    QCOMPARE(closeErrorFromPeer(1002, "").code, ErrorCode::InvalidMessage);
    QCOMPARE(closeErrorFromPeer(1011, "").code, ErrorCode::Internal);
    const Error withText = closeErrorFromPeer(4003, "go away");
    QCOMPARE(withText.code, ErrorCode::Banned);
    QVERIFY(withText.message.find("4003") != std::string::npos);
    QVERIFY(withText.message.find("go away") != std::string::npos);
}

void TestCloseReason::peerReasonWithUnknownPrefix() {
    const Error error = closeErrorFromPeer(1009, "too_large: whatever");
    QCOMPARE(error.code, ErrorCode::LimitExceeded);
    QVERIFY(error.message.find("too_large: whatever") != std::string::npos);
    QCOMPARE(closeErrorFromPeer(4001, ": nothing").code, ErrorCode::Unauthenticated);
}

void TestCloseReason::roundTripEveryCode() {
    for (ErrorCode code : kAllCodes) {
        const Error sent{code, "details: with a colon"};
        const Error received = closeErrorFromPeer(closeCodeFor(code), closeReasonFor(sent));
        QCOMPARE(received.code, code);
        QCOMPARE(received.message, sent.message);
    }
}

QTEST_APPLESS_MAIN(TestCloseReason)
#include "test_close_reason.moc"
