// Tests of Tensor, shapes and matrix views.
#include <QtTest/QtTest>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "goblin/core/bulk_memory.hpp"
#include "goblin/core/finite_values.hpp"
#include "goblin/core/tensor.hpp"

using goblin::ErrorCode;
using goblin::core::byteSize;
using goblin::core::DType;
using goblin::core::elementCount;
using goblin::core::MatrixView;
using goblin::core::Shape;
using goblin::core::Tensor;

class TestTensor : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void elementCountOfShapes();
    void elementCountRejectsNegativeDims();
    void elementCountRejectsOverflow();
    void elementCountRejectsRankOverLimit();
    void byteSizeOfDtypes();
    void byteSizeRejectsOverflow();
    void allocate();
    void allocateIsAligned();
    void largeStorageIsReusedAndBounded();
    void keptStorageIsReleased();
    void allocateRejectsBadShapes();
    void viewOfWholeTensor();
    void subViewAndCopy();
    void copyOfEmptyView();
    void withShapeSharesStorage();
    void allFiniteFindsEveryNonFiniteValue();
    // Last: it changes how this process's heap behaves.
    void keptHeapServesMiBBuffersWithoutMapping();
};

void TestTensor::elementCountOfShapes() {
    QCOMPARE(elementCount({}).value(), std::int64_t{1});
    QCOMPARE(elementCount({0}).value(), std::int64_t{0});
    QCOMPARE(elementCount({2, 3, 4}).value(), std::int64_t{24});
    QCOMPARE(elementCount({5, 0, 7}).value(), std::int64_t{0});
    QCOMPARE(elementCount({1, 1, 1, 1, 1, 1, 1, 9}).value(), std::int64_t{9});
    // A zero dimension makes a product of huge dimensions harmless.
    const std::int64_t big = std::int64_t{1} << 40;
    QCOMPARE(elementCount({0, big, big}).value(), std::int64_t{0});
}

void TestTensor::elementCountRejectsNegativeDims() {
    auto count = elementCount({2, -3});
    QVERIFY(!count.has_value());
    QCOMPARE(count.error().code, ErrorCode::ShapeMismatch);
    QVERIFY(!elementCount({-1}).has_value());
    QVERIFY(!elementCount({0, -1}).has_value());
}

void TestTensor::elementCountRejectsOverflow() {
    const std::int64_t big = std::int64_t{1} << 32;
    auto count = elementCount({big, big});
    QVERIFY(!count.has_value());
    QCOMPARE(count.error().code, ErrorCode::LimitExceeded);
    QVERIFY(elementCount({big, big / 2 - 1}).has_value());
    const std::int64_t max = std::numeric_limits<std::int64_t>::max();
    QCOMPARE(elementCount({max}).value(), max);
    QVERIFY(!elementCount({max, 2}).has_value());
    QVERIFY(!elementCount({2, 2, max / 3}).has_value());
}

void TestTensor::elementCountRejectsRankOverLimit() {
    auto count = elementCount(Shape(9, 1));
    QVERIFY(!count.has_value());
    QCOMPARE(count.error().code, ErrorCode::LimitExceeded);
    QVERIFY(elementCount(Shape(8, 1)).has_value());
}

void TestTensor::byteSizeOfDtypes() {
    QCOMPARE(byteSize(DType::F32, {2, 3}).value(), std::size_t{24});
    QCOMPARE(byteSize(DType::F64, {2, 3}).value(), std::size_t{48});
    QCOMPARE(byteSize(DType::I32, {5}).value(), std::size_t{20});
    QCOMPARE(byteSize(DType::I64, {5}).value(), std::size_t{40});
    QCOMPARE(byteSize(DType::Bool, {7}).value(), std::size_t{7});
    QCOMPARE(byteSize(DType::F64, {}).value(), std::size_t{8});
    QCOMPARE(byteSize(DType::F64, {0, 3}).value(), std::size_t{0});
}

void TestTensor::byteSizeRejectsOverflow() {
    // The element count fits in int64, the byte size does not.
    const std::int64_t count = (std::numeric_limits<std::int64_t>::max() / 8) + 1;
    auto size = byteSize(DType::F64, {count});
    QVERIFY(!size.has_value());
    QCOMPARE(size.error().code, ErrorCode::LimitExceeded);
    QVERIFY(byteSize(DType::Bool, {count}).has_value());
    QVERIFY(!byteSize(DType::F32, {-4}).has_value());
}

void TestTensor::allocate() {
    auto tensor = Tensor::allocate(DType::F32, {3, 4});
    QVERIFY(tensor.has_value());
    QCOMPARE(tensor->dtype(), DType::F32);
    QCOMPARE(tensor->shape(), (Shape{3, 4}));
    QCOMPARE(tensor->byteSize(), std::size_t{48});
    QCOMPARE(tensor->elementCount(), std::int64_t{12});
    QCOMPARE(tensor->values<float>().size(), std::size_t{12});
    QCOMPARE(tensor->bytes().size(), std::size_t{48});
    // Copies share storage (a Tensor is shared as a value).
    Tensor copy = *tensor;
    tensor->values<float>()[5] = 2.5f;
    QCOMPARE(copy.values<float>()[5], 2.5f);

    auto empty = Tensor::allocate(DType::I64, {0, 5});
    QVERIFY(empty.has_value());
    QCOMPARE(empty->byteSize(), std::size_t{0});
    QCOMPARE(empty->elementCount(), std::int64_t{0});
    QVERIFY(empty->values<std::int64_t>().empty());

    auto scalar = Tensor::allocate(DType::F64, {});
    QVERIFY(scalar.has_value());
    QCOMPARE(scalar->elementCount(), std::int64_t{1});
}

void TestTensor::allocateIsAligned() {
    for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::Bool}) {
        for (std::int64_t n : {1, 3, 17, 1000}) {
            const Tensor tensor = Tensor::allocate(dtype, {n}).value();
            const auto address = reinterpret_cast<std::uintptr_t>(tensor.bytes().data());
            QCOMPARE(address % 64, std::uintptr_t{0});
        }
    }
}

void TestTensor::largeStorageIsReusedAndBounded() {
    // A large tensor's storage is writable end to end, page aligned, and, once freed, serves the
    // next tensor of about its size (no fresh pages to fault in).
    const std::int64_t elements = (std::int64_t{38} << 20) / 4 + 1; // an unusual 38 MiB + 4 bytes
    const std::byte* first = nullptr;
    {
        Tensor tensor = Tensor::allocate(DType::F32, {elements}).value();
        std::fill(tensor.values<float>().begin(), tensor.values<float>().end(), 1.5f);
        QCOMPARE(tensor.values<float>().back(), 1.5f);
        first = tensor.bytes().data();
        QCOMPARE(reinterpret_cast<std::uintptr_t>(first) % 4096, std::uintptr_t{0});
    }
    QVERIFY(goblin::core::keptBulkBytes() >= (std::size_t{38} << 20));
    {
        const Tensor again = Tensor::allocate(DType::F32, {elements - 7}).value();
        QCOMPARE(again.bytes().data(), first);
    }
    {
        // A much smaller buffer does not take it: it would hold the mapping's size for its life.
        const Tensor small = Tensor::allocate(DType::F32, {(std::int64_t{3} << 20) / 4}).value();
        QVERIFY(small.bytes().data() != first);
    }
    // However many are freed, at most the limit is kept (an eighth of memory, 256 MiB to 2 GiB).
    const std::size_t limit = goblin::core::keptBulkLimit();
    QVERIFY(limit >= (std::size_t{256} << 20) && limit <= (std::size_t{2048} << 20));
    constexpr std::size_t kBuffer = std::size_t{64} << 20;
    std::vector<void*> buffers;
    for (std::size_t i = 0; i < limit / kBuffer + 2; ++i)
        buffers.push_back(goblin::core::allocateBulk(kBuffer)); // mapped, never touched
    for (void* buffer : buffers)
        goblin::core::freeBulk(buffer, kBuffer);
    QVERIFY(goblin::core::keptBulkBytes() <= limit);
    QVERIFY(goblin::core::keptBulkBytes() >= limit - kBuffer);
    // Small buffers come from the heap, 64-byte aligned.
    void* small = goblin::core::allocateBulk(100);
    QCOMPARE(reinterpret_cast<std::uintptr_t>(small) % 64, std::uintptr_t{0});
    goblin::core::freeBulk(small, 100);
}

void TestTensor::keptStorageIsReleased() {
    // An idle process gives the kept buffers back; the next large tensor maps fresh memory.
    goblin::core::freeBulk(goblin::core::allocateBulk(std::size_t{8} << 20), std::size_t{8} << 20);
    const std::size_t kept = goblin::core::keptBulkBytes();
    QVERIFY(kept >= (std::size_t{8} << 20));
    QCOMPARE(goblin::core::releaseKeptBulk(), kept);
    QCOMPARE(goblin::core::keptBulkBytes(), std::size_t{0});
    QCOMPARE(goblin::core::releaseKeptBulk(), std::size_t{0});
    Tensor tensor = Tensor::allocate(DType::F64, {std::int64_t{1} << 20}).value();
    std::fill(tensor.values<double>().begin(), tensor.values<double>().end(), 2.0);
    QCOMPARE(tensor.values<double>().back(), 2.0);
}

void TestTensor::allocateRejectsBadShapes() {
    QVERIFY(!Tensor::allocate(DType::F32, {-1, 2}).has_value());
    const std::int64_t big = std::int64_t{1} << 40;
    auto huge = Tensor::allocate(DType::F32, {big, big});
    QVERIFY(!huge.has_value());
    QCOMPARE(huge.error().code, ErrorCode::LimitExceeded);
    QVERIFY(!Tensor::allocate(DType::F32, Shape(9, 1)).has_value());
}

void TestTensor::viewOfWholeTensor() {
    Tensor tensor = Tensor::allocate(DType::I32, {3, 5}).value();
    for (int i = 0; i < 15; ++i)
        tensor.values<std::int32_t>()[static_cast<std::size_t>(i)] = i;
    const MatrixView view = viewOf(tensor);
    QCOMPARE(view.dtype, DType::I32);
    QCOMPARE(view.rows, std::int64_t{3});
    QCOMPARE(view.cols, std::int64_t{5});
    QCOMPARE(view.rowStride, std::int64_t{5});
    QCOMPARE(view.row<std::int32_t>(2)[1], 11);
}

void TestTensor::subViewAndCopy() {
    for (DType dtype : {DType::F64, DType::I32}) {
        Tensor tensor = Tensor::allocate(dtype, {6, 7}).value();
        for (int i = 0; i < 42; ++i) {
            if (dtype == DType::F64)
                tensor.values<double>()[static_cast<std::size_t>(i)] = i + 0.5;
            else
                tensor.values<std::int32_t>()[static_cast<std::size_t>(i)] = i;
        }
        const MatrixView sub = subView(viewOf(tensor), 1, 4, 2, 3);
        QCOMPARE(sub.rows, std::int64_t{4});
        QCOMPARE(sub.cols, std::int64_t{3});
        QCOMPARE(sub.rowStride, std::int64_t{7});
        // A view of a view keeps the original stride.
        const MatrixView subSub = subView(sub, 1, 2, 1, 2);
        QCOMPARE(subSub.rowStride, std::int64_t{7});

        auto copy = copyToTensor(sub);
        QVERIFY(copy.has_value());
        QCOMPARE(copy->shape(), (Shape{4, 3}));
        auto nested = copyToTensor(subSub);
        QVERIFY(nested.has_value());
        QCOMPARE(nested->shape(), (Shape{2, 2}));
        for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 3; ++j) {
                const int source = (i + 1) * 7 + (j + 2);
                const auto at = static_cast<std::size_t>(i * 3 + j);
                if (dtype == DType::F64)
                    QCOMPARE(copy->values<double>()[at], source + 0.5);
                else
                    QCOMPARE(copy->values<std::int32_t>()[at], source);
            }
        }
        const int corner = 2 * 7 + 3; // row 1+1, col 2+1 of the original
        if (dtype == DType::F64)
            QCOMPARE(nested->values<double>()[0], corner + 0.5);
        else
            QCOMPARE(nested->values<std::int32_t>()[0], corner);
    }
}

void TestTensor::copyOfEmptyView() {
    Tensor tensor = Tensor::allocate(DType::F32, {4, 4}).value();
    auto noCols = copyToTensor(subView(viewOf(tensor), 0, 4, 2, 0));
    QVERIFY(noCols.has_value());
    QCOMPARE(noCols->shape(), (Shape{4, 0}));
    QCOMPARE(noCols->byteSize(), std::size_t{0});
    auto noRows = copyToTensor(subView(viewOf(tensor), 4, 0, 0, 4));
    QVERIFY(noRows.has_value());
    QCOMPARE(noRows->shape(), (Shape{0, 4}));
}

void TestTensor::withShapeSharesStorage() {
    auto tensor = Tensor::allocate(DType::I32, {2, 6}).value();
    for (std::size_t i = 0; i < 12; ++i)
        tensor.values<std::int32_t>()[i] = static_cast<std::int32_t>(i);
    const Tensor reshaped = tensor.withShape({3, 2, 2});
    QCOMPARE(reshaped.shape(), (Shape{3, 2, 2}));
    QCOMPARE(reshaped.dtype(), DType::I32);
    QCOMPARE(reshaped.byteSize(), tensor.byteSize());
    QCOMPARE(reshaped.bytes().data(), tensor.bytes().data()); // no copy
    QCOMPARE(tensor.shape(), (Shape{2, 6}));                  // the original keeps its shape
}

// Every length up to past two vector widths, a NaN or ±Inf at every position: found; the largest
// finite values, subnormals and signed zeros are finite.
template <class T> void checkAllFinite() {
    const T edges[] = {std::numeric_limits<T>::max(),
                       std::numeric_limits<T>::lowest(),
                       std::numeric_limits<T>::denorm_min(),
                       T(-0.0),
                       T(0.0),
                       T(1.5)};
    const T bad[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                     -std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::quiet_NaN()};
    QVERIFY(goblin::core::allFinite(std::span<const T>{}));
    for (std::size_t length = 1; length <= 40; ++length) {
        std::vector<T> values(length);
        for (std::size_t i = 0; i < length; ++i)
            values[i] = edges[i % std::size(edges)];
        QVERIFY(goblin::core::allFinite(std::span<const T>(values)));
        for (std::size_t at = 0; at < length; ++at)
            for (T value : bad) {
                std::vector<T> spoiled = values;
                spoiled[at] = value;
                QVERIFY2(!goblin::core::allFinite(std::span<const T>(spoiled)),
                         qPrintable(QString("length %1 at %2").arg(length).arg(at)));
            }
    }
}

void TestTensor::allFiniteFindsEveryNonFiniteValue() {
    checkAllFinite<float>();
    checkAllFinite<double>();
}

QTEST_APPLESS_MAIN(TestTensor)
void TestTensor::keptHeapServesMiBBuffersWithoutMapping() {
#if defined(__GLIBC__)
    // After keepHeapMapped, a buffer of 1 or 30 MiB comes from the heap (no new mapping), and
    // freeing it trims nothing, so the next one reuses pages already there.
    goblin::core::keepHeapMapped();
    for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{30} << 20}) {
        const auto mapped = ::mallinfo2().hblks;
        auto* buffer = static_cast<unsigned char*>(std::malloc(bytes));
        QVERIFY(buffer != nullptr);
        buffer[0] = 1;
        buffer[bytes - 1] = 2;
        QCOMPARE(::mallinfo2().hblks, mapped);
        const auto heap = ::mallinfo2().arena;
        std::free(buffer);
        QCOMPARE(::mallinfo2().arena, heap);
    }
#else
    QSKIP("glibc's heap only");
#endif
}

#include "test_tensor.moc"
