// Which OpenBLAS kernel to ask for: only upward, only from a name the table knows.
#include <QtTest/QtTest>

#include <optional>
#include <string>

#include "goblin/compute/blas_kernel.hpp"

using goblin::compute::betterBlasKernel;
using goblin::compute::blasKernelLevel;
using goblin::compute::VectorLevel;

namespace {
std::string orNone(const std::optional<std::string>& kernel) {
    return kernel.value_or("(none)");
}
} // namespace

class TestBlasKernel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aFallbackBelowTheCpuIsRaisedToTheCpusLevel() {
        // Debian 12's OpenBLAS on a CPU model newer than it: Prescott on an AVX-512 machine.
        QCOMPARE(orNone(betterBlasKernel("Prescott", VectorLevel::Avx512)),
                 std::string("SkylakeX"));
        QCOMPARE(orNone(betterBlasKernel("Prescott", VectorLevel::Avx2)), std::string("Haswell"));
        QCOMPARE(orNone(betterBlasKernel("Nehalem", VectorLevel::Avx)), std::string("Sandybridge"));
        QCOMPARE(orNone(betterBlasKernel("Sandybridge", VectorLevel::Avx2)),
                 std::string("Haswell"));
        QCOMPARE(orNone(betterBlasKernel("Zen", VectorLevel::Avx512)), std::string("SkylakeX"));
    }

    void aKernelAtOrAboveTheCpuIsLeftAlone() {
        QCOMPARE(orNone(betterBlasKernel("Cooperlake", VectorLevel::Avx512)),
                 std::string("(none)"));
        QCOMPARE(orNone(betterBlasKernel("SkylakeX", VectorLevel::Avx512)), std::string("(none)"));
        QCOMPARE(orNone(betterBlasKernel("Haswell", VectorLevel::Avx2)), std::string("(none)"));
        QCOMPARE(orNone(betterBlasKernel("Prescott", VectorLevel::Baseline)),
                 std::string("(none)"));
        // A kernel above the CPU's level (set by hand) is not lowered either.
        QCOMPARE(orNone(betterBlasKernel("SkylakeX", VectorLevel::Avx2)), std::string("(none)"));
    }

    void aNameOutsideTheTableIsLeftAlone() {
        // Another architecture's core, a newer OpenBLAS's name, or a library that says nothing.
        QCOMPARE(orNone(betterBlasKernel("NEOVERSEN1", VectorLevel::Avx512)),
                 std::string("(none)"));
        QCOMPARE(orNone(betterBlasKernel("unknown", VectorLevel::Avx512)), std::string("(none)"));
        QCOMPARE(orNone(betterBlasKernel("", VectorLevel::Avx2)), std::string("(none)"));
        QVERIFY(!blasKernelLevel("prescott").has_value()); // spelled as OpenBLAS reports it
        QVERIFY(blasKernelLevel("Prescott") == VectorLevel::Baseline);
    }

    void thisProcessRunsAKernelTheTableKnows() {
        // The library this build links reports a core name; on x86-64 it is one of the table's.
        const std::string current = goblin::compute::currentBlasKernel();
        QVERIFY(!current.empty());
#if defined(__x86_64__)
        QVERIFY2(blasKernelLevel(current).has_value(), current.c_str());
#endif
    }
};

QTEST_APPLESS_MAIN(TestBlasKernel)
#include "test_blas_kernel.moc"
