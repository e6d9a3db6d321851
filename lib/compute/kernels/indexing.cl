// Indexing graph kernels (catalog 3): gather, index_select / embedding, one_hot, index_add and the
// index range check they share. -DI = the index type (int or long); -DE = an unsigned type of the
// element's size for the copies; index_add adds -DT/-DS of the values. Indices are checked before
// anything is read through them: out of range sets the error flag (invalid_input on the host).

__kernel void check_indices(__global const I* index, const long size, __global int* error) {
    const long value = (long)index[get_global_id(0)];
    if (value < 0 || value >= size)
        raise_error(error, 1);
}

#ifdef E
// out[i] = x[i with its `dim` coordinate replaced by index[i]]; layout = index dims then x strides.
__kernel void gather_along(__global const E* x, __global const I* index, __global E* out,
                           __global const long* layout, const int dim) {
    const size_t i = get_global_id(0);
    const int rank = (int)layout[0];
    __global const long* dims = layout + 1;
    __global const long* strides = layout + 1 + rank;
    ulong rest = i;
    long offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
        const long coordinate = (long)(rest % (ulong)dims[d]);
        rest /= (ulong)dims[d];
        offset += (d == dim ? (long)index[i] : coordinate) * strides[d];
    }
    out[i] = x[offset];
}

// out[o, j, r] = x[o, index[j], r] for x seen as [outer, size, inner].
__kernel void select_rows(__global const E* x, __global const I* index, __global E* out, const long count,
                          const long size, const long inner) {
    const long g = (long)get_global_id(0);
    const long r = g % inner;
    const long j = (g / inner) % count;
    const long o = g / (inner * count);
    out[g] = x[(o * size + (long)index[j]) * inner + r];
}
#endif

__kernel void one_hot_rows(__global const I* x, const long classes, __global long* out) {
    const long g = (long)get_global_id(0);
    out[g] = (long)x[g / classes] == g % classes ? 1 : 0;
}

#ifdef T
// out = x, then out[o, index[j], r] += alpha·source[o, j, r] for j in order: one work-item per
// element of out walks every j, so each element accumulates in the reference's order.
__kernel void index_add_rows(__global const T* x, __global const I* index, __global const T* source,
                             __global T* out, const long count, const long size, const long inner,
                             const T alpha) {
    const long g = (long)get_global_id(0);
    const long r = g % inner;
    const long t = (g / inner) % size;
    const long o = g / (inner * size);
    T acc = x[g];
    for (long j = 0; j < count; ++j) {
        if ((long)index[j] != t)
            continue;
        const T s = source[(o * count + j) * inner + r];
#ifdef GM_IS_FLOAT
        acc = alpha == (T)1 ? acc + s : acc + alpha * s;
#else
        acc = GM_CAT(gm_wrap_add_, S)(acc, GM_CAT(gm_wrap_mul_, S)(alpha, s));
#endif
    }
    out[g] = acc;
}
#endif
