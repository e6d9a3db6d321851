// Layout graph kernels (catalog 3): concat (one block copy per input), slice, constant pad, and
// dropout_mask (philox.h, prepended for this family). -DE = an unsigned type of the element's size;
// pad adds -DT for its fill value, dropout_mask -DT for its scale.

#ifdef E
// out[o·out_block + offset + r] = in[o·in_block + r]: one input's blocks of a concat.
__kernel void copy_blocks(__global const E* in, __global E* out, const long in_block, const long out_block,
                          const long offset) {
    const long g = (long)get_global_id(0);
    out[(g / in_block) * out_block + offset + g % in_block] = in[g];
}

// x seen as [outer, size, inner]; out[o, j, r] = x[o, start + j·step, r].
__kernel void slice_rows(__global const E* x, __global E* out, const long length, const long size,
                         const long inner, const long start, const long step) {
    const long g = (long)get_global_id(0);
    const long r = g % inner;
    const long j = (g / inner) % length;
    const long o = g / (inner * length);
    out[g] = x[(o * size + start + j * step) * inner + r];
}
#endif

#ifdef T
// layout: rank, out dims, x dims, pads before each dim (negative crops).
__kernel void pad_constant(__global const T* x, __global T* out, __global const long* layout, const T value) {
    const size_t g = get_global_id(0);
    const int rank = (int)layout[0];
    __global const long* out_dims = layout + 1;
    __global const long* in_dims = layout + 1 + rank;
    __global const long* before = layout + 1 + 2 * rank;
    ulong rest = g;
    long offset = 0;
    long stride = 1;
    int inside = 1;
    for (int d = rank - 1; d >= 0; --d) {
        const long position = (long)(rest % (ulong)out_dims[d]) - before[d];
        rest /= (ulong)out_dims[d];
        inside = inside && position >= 0 && position < in_dims[d];
        offset += position * stride;
        stride *= in_dims[d];
    }
    out[g] = inside ? x[offset] : value;
}

// Element i keeps (scale) when Philox's first word for counter offset + i is ≥ threshold
// (= ⌈p·2³²⌉, so the comparison is exact without fp64), else 0.
__kernel void dropout_mask_values(__global T* out, const ulong seed, const ulong offset, const ulong threshold,
                                  const T scale) {
    const size_t i = get_global_id(0);
    const uint word = goblin_philox_dropout_word(seed, offset, (ulong)i);
    out[i] = (ulong)word >= threshold ? scale : (T)0;
}
#endif
