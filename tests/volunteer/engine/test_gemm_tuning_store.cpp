// Tests of the calibrated-parameter file: per device + driver and dtype, broken files ignored.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <fstream>

#include "gemm_tuning_store.hpp"

using goblin::compute::OpenClDeviceInfo;
using goblin::core::DType;
using goblin::volunteer::GemmTuningStore;
using goblin::volunteer::StoredTuning;

namespace {

OpenClDeviceInfo gpu(const char* driver) {
    OpenClDeviceInfo info;
    info.platform = "Portable Computing Language";
    info.name = "pthread-cpu";
    info.driverVersion = driver;
    return info;
}

} // namespace

class TestGemmTuningStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundTripsPerDeviceAndDtype();
    void anotherDriverGetsNothing();
    void brokenFileIsIgnored();
};

void TestGemmTuningStore::roundTripsPerDeviceAndDtype() {
    QTemporaryDir dir;
    GemmTuningStore store(dir.path().toStdString());
    QVERIFY(!store.load(gpu("3.1"), DType::F32).has_value());
    const StoredTuning f32{{{"MWG", 64}, {"NWG", 32}}, 62.5, 16.0};
    QVERIFY(store.save(gpu("3.1"), DType::F32, f32).has_value());
    QVERIFY(store.save(gpu("3.1"), DType::F64, StoredTuning{{}, 9.0, 9.0}).has_value());
    GemmTuningStore again(dir.path().toStdString());
    auto loaded = again.load(gpu("3.1"), DType::F32);
    QVERIFY(loaded.has_value());
    QCOMPARE(loaded->parameters, f32.parameters);
    QCOMPARE(loaded->gflops, 62.5);
    QCOMPARE(loaded->defaultGflops, 16.0);
    auto f64 = again.load(gpu("3.1"), DType::F64);
    QVERIFY(f64.has_value() && f64->parameters.empty()); // defaults won: stored as such
}

void TestGemmTuningStore::anotherDriverGetsNothing() {
    QTemporaryDir dir;
    GemmTuningStore store(dir.path().toStdString());
    QVERIFY(store.save(gpu("3.1"), DType::F32, StoredTuning{{{"MWG", 64}}, 1, 1}).has_value());
    QVERIFY(!store.load(gpu("4.0"), DType::F32).has_value());
}

void TestGemmTuningStore::brokenFileIsIgnored() {
    QTemporaryDir dir;
    GemmTuningStore store(dir.path().toStdString());
    for (const char* content : {"not json", "[]", "{\"x\": 1}"}) {
        std::ofstream(store.path()) << content;
        QVERIFY(!store.load(gpu("3.1"), DType::F32).has_value());
    }
    std::ofstream(store.path())
        << R"({"Portable Computing Language | pthread-cpu | 3.1": {"f32": {"xgemm": "MWG=abc"}}})";
    QVERIFY(!store.load(gpu("3.1"), DType::F32).has_value());
    // Saving over a broken file starts a fresh one.
    QVERIFY(store.save(gpu("3.1"), DType::F32, StoredTuning{{{"MWG", 32}}, 1, 1}).has_value());
    QVERIFY(store.load(gpu("3.1"), DType::F32).has_value());
}

QTEST_APPLESS_MAIN(TestGemmTuningStore)
#include "test_gemm_tuning_store.moc"
