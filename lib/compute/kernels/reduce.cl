// Reduction graph kernels: ONE work-item per output element (or per line), walking the reduced
// elements in the C order tables the host built (bases: first element of each output, members:
// offsets of the reduced elements), accumulating sequentially in the accumulator type exactly as the
// CPU reference does, so the two agree bit for bit. Built with -DT/-DS (input) and -DA/-DAS
// (accumulator, i64 for i32 sums) and -DGM_IS_FLOAT for floats.

__kernel void reduce(__global const T* x, __global const long* bases, __global const long* members,
                     const long count, __global A* out, const int op, const long correction) {
    const size_t o = get_global_id(0);
    __global const T* line = x + bases[o];
    A acc = op == OP_PROD ? (A)1 : (A)0;
    if (op == OP_AMAX || op == OP_AMIN)
        acc = (A)line[members[0]];
    for (long j = 0; j < count; ++j) {
        const A v = (A)line[members[j]];
#ifdef GM_IS_FLOAT
        acc = op == OP_PROD   ? acc * v
              : op == OP_AMAX ? GM_CAT(gm_nan_max_, AS)(acc, v)
              : op == OP_AMIN ? GM_CAT(gm_nan_min_, AS)(acc, v)
                              : acc + v;
#else
        acc = op == OP_PROD   ? GM_CAT(gm_wrap_mul_, AS)(acc, v)
              : op == OP_AMAX ? (acc > v ? acc : v)
              : op == OP_AMIN ? (acc < v ? acc : v)
                              : GM_CAT(gm_wrap_add_, AS)(acc, v);
#endif
    }
#ifdef GM_IS_FLOAT
    const A n = (A)count;
    if (op == OP_MEAN)
        acc = acc / n;
    if (op == OP_VAR) {
        // Two passes: the mean, then squared deviations (no E[x²]−E[x]² cancellation).
        const A mean = acc / n;
        A squares = 0;
        for (long j = 0; j < count; ++j)
            squares += ((A)line[members[j]] - mean) * ((A)line[members[j]] - mean);
        const long kept = count - correction;
        acc = squares / (A)(kept > 0 ? kept : 0);
    }
#endif
    out[o] = acc;
}

// First index of the extreme; a NaN counts as the extreme (first NaN wins).
__kernel void arg_reduce(__global const T* x, __global const long* bases, __global const long* members,
                         const long count, __global long* out, const int op) {
    const size_t o = get_global_id(0);
    __global const T* line = x + bases[o];
    long best = 0;
    T best_value = line[members[0]];
    for (long j = 1; j < count; ++j) {
        if (IS_NAN(best_value))
            break;
        const T v = line[members[j]];
        const int better = IS_NAN(v) || (op == OP_ARGMAX ? v > best_value : v < best_value);
        if (better) {
            best = j;
            best_value = v;
        }
    }
    out[o] = best;
}

__kernel void cumulative_sum(__global const T* x, __global const long* bases, __global const long* members,
                             const long count, __global A* out) {
    const long base = bases[get_global_id(0)];
    A acc = 0;
    for (long j = 0; j < count; ++j) {
#ifdef GM_IS_FLOAT
        acc = acc + (A)x[base + members[j]];
#else
        acc = GM_CAT(gm_wrap_add_, AS)(acc, (A)x[base + members[j]]);
#endif
        out[base + members[j]] = acc;
    }
}

#ifdef GM_IS_FLOAT
// softmax / log_softmax along one line, max-subtracted; a NaN anywhere makes the line NaN.
__kernel void softmax_lines(__global const T* x, __global const long* bases, __global const long* members,
                            const long count, __global T* out, const int op) {
    const long base = bases[get_global_id(0)];
    T top = -INFINITY;
    for (long j = 0; j < count; ++j)
        top = GM_CAT(gm_nan_max_, S)(top, x[base + members[j]]);
    T total = 0;
    for (long j = 0; j < count; ++j)
        total += GM_CAT(gm_exp_, S)(x[base + members[j]] - top);
    const T log_total = GM_CAT(gm_log_, S)(total);
    for (long j = 0; j < count; ++j) {
        const T v = x[base + members[j]];
        out[base + members[j]] = op == OP_SOFTMAX ? GM_CAT(gm_exp_, S)(v - top) / total : v - top - log_total;
    }
}
#endif
