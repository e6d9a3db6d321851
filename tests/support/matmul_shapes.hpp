// Matmul shape tables for data-driven QtTest cases: each test keeps its own table (its sizes are
// chosen for its backend) and adds the rows "<dtype> <name>" with columns dtype, m, k, n.
#pragma once

#include <QtTest/QtTest>

#include <initializer_list>

#include "goblin/core/dtype.hpp"

Q_DECLARE_METATYPE(goblin::core::DType)

namespace goblin::testing {

struct MatmulShape {
    const char* name;
    qint64 m;
    qint64 k;
    qint64 n;
};

// Adds the columns and one row per dtype × shape, dtypes outermost (f32 rows, then f64 rows).
inline void addMatmulRows(std::initializer_list<MatmulShape> shapes,
                          std::initializer_list<core::DType> dtypes = {core::DType::F32,
                                                                       core::DType::F64}) {
    QTest::addColumn<core::DType>("dtype");
    QTest::addColumn<qint64>("m");
    QTest::addColumn<qint64>("k");
    QTest::addColumn<qint64>("n");
    for (core::DType dtype : dtypes) {
        const char* prefix = dtype == core::DType::F32 ? "f32" : "f64";
        for (const MatmulShape& shape : shapes)
            QTest::addRow("%s %s", prefix, shape.name) << dtype << shape.m << shape.k << shape.n;
    }
}

} // namespace goblin::testing
