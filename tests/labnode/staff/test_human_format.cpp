// Tests of human_format: grouped thousands (signs, every length) and UTC times.
#include <QtTest/QtTest>

#include <cstdint>
#include <string>

#include "staff/human_format.hpp"

using goblin::labnode::groupedNumber;
using goblin::labnode::utcTime;

class TestHumanFormat : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void groupsThousands_data() {
        QTest::addColumn<qint64>("value");
        QTest::addColumn<QString>("text");
        QTest::newRow("0") << qint64(0) << "0";
        QTest::newRow("999") << qint64(999) << "999";
        QTest::newRow("1000") << qint64(1000) << "1,000";
        QTest::newRow("12345") << qint64(12345) << "12,345";
        QTest::newRow("123456") << qint64(123456) << "123,456";
        QTest::newRow("1234567") << qint64(1234567) << "1,234,567";
        QTest::newRow("-1000") << qint64(-1000) << "-1,000";
        QTest::newRow("-999") << qint64(-999) << "-999";
        QTest::newRow("min") << qint64(INT64_MIN) << "-9,223,372,036,854,775,808";
    }
    void groupsThousands() {
        QFETCH(qint64, value);
        QFETCH(QString, text);
        QCOMPARE(QString::fromStdString(groupedNumber(value)), text);
    }

    void printsUtcMinutes() {
        QCOMPARE(utcTime(1'796'000'000.0), std::string("2026-11-30 00:53 UTC"));
        QCOMPARE(utcTime(0.0), std::string("-"));
    }
};

QTEST_APPLESS_MAIN(TestHumanFormat)
#include "test_human_format.moc"
