// Tests of parseWsUrl: node addresses "ws://HOST:PORT[/path]" and "wss://HOST:PORT[/path]".
#include <QtTest/QtTest>

#include <string>

#include "goblin/net/ws_url.hpp"

using goblin::ErrorCode;
using goblin::net::parseWsUrl;

class TestWsUrl : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void validUrls_data();
    void validUrls();
    void invalidUrls_data();
    void invalidUrls();
};

void TestWsUrl::validUrls_data() {
    QTest::addColumn<QString>("url");
    QTest::addColumn<QString>("host");
    QTest::addColumn<QString>("port");
    QTest::addColumn<QString>("path");
    QTest::newRow("ipv4") << "ws://127.0.0.1:7000"
                          << "127.0.0.1"
                          << "7000"
                          << "";
    QTest::newRow("name with path") << "ws://lab.example.org:443/v1/volunteer"
                                    << "lab.example.org"
                                    << "443"
                                    << "/v1/volunteer";
    QTest::newRow("root path") << "ws://localhost:1/"
                               << "localhost"
                               << "1"
                               << "/";
    QTest::newRow("max port") << "ws://h:65535"
                              << "h"
                              << "65535"
                              << "";
    QTest::newRow("ipv6") << "ws://[::1]:7000"
                          << "::1"
                          << "7000"
                          << "";
    QTest::newRow("ipv6 with path") << "ws://[fe80::1]:80/v1/researcher"
                                    << "fe80::1"
                                    << "80"
                                    << "/v1/researcher";
    QTest::newRow("wss") << "wss://lab.example.org:7000"
                         << "lab.example.org"
                         << "7000"
                         << "";
    QTest::newRow("wss ipv6 with path") << "wss://[::1]:443/v1/volunteer"
                                        << "::1"
                                        << "443"
                                        << "/v1/volunteer";
}

void TestWsUrl::validUrls() {
    QFETCH(QString, url);
    QFETCH(QString, host);
    QFETCH(QString, port);
    QFETCH(QString, path);
    auto parsed = parseWsUrl(url.toStdString());
    QVERIFY2(parsed.has_value(), parsed ? "" : parsed.error().message.c_str());
    QCOMPARE(QString::fromStdString(parsed->host), host);
    QCOMPARE(QString::fromStdString(parsed->port), port);
    QCOMPARE(QString::fromStdString(parsed->path), path);
    QCOMPARE(parsed->tls, url.startsWith("wss://"));
}

void TestWsUrl::invalidUrls_data() {
    QTest::addColumn<QString>("url");
    QTest::newRow("empty") << "";
    QTest::newRow("http scheme") << "http://127.0.0.1:7000";
    QTest::newRow("wss without port") << "wss://127.0.0.1";
    QTest::newRow("wss upper-case") << "WSS://127.0.0.1:7000";
    QTest::newRow("https scheme") << "https://127.0.0.1:7000";
    QTest::newRow("no scheme") << "127.0.0.1:7000";
    QTest::newRow("upper-case scheme") << "WS://127.0.0.1:7000";
    QTest::newRow("scheme only") << "ws://";
    QTest::newRow("no port") << "ws://127.0.0.1";
    QTest::newRow("no port with path") << "ws://127.0.0.1/v1/volunteer";
    QTest::newRow("empty port") << "ws://127.0.0.1:";
    QTest::newRow("no host") << "ws://:7000";
    QTest::newRow("port zero") << "ws://h:0";
    QTest::newRow("port too big") << "ws://h:65536";
    QTest::newRow("port huge") << "ws://h:99999999999999999999";
    QTest::newRow("negative port") << "ws://h:-1";
    QTest::newRow("port with letters") << "ws://h:70a0";
    QTest::newRow("port with space") << "ws://h: 7000";
    QTest::newRow("port with query") << "ws://h:7000?x=1";
    QTest::newRow("ipv6 without port") << "ws://[::1]";
}

void TestWsUrl::invalidUrls() {
    QFETCH(QString, url);
    auto parsed = parseWsUrl(url.toStdString());
    QVERIFY2(!parsed.has_value(), qPrintable("accepted " + url));
    QCOMPARE(parsed.error().code, ErrorCode::InvalidInput);
    QVERIFY(!parsed.error().message.empty());
}

QTEST_APPLESS_MAIN(TestWsUrl)
#include "test_ws_url.moc"
