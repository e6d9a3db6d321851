// Elementwise graph kernels: unary, binary and where with broadcasting, clamp. Built once per dtype
// with -DT=<OpenCL type> -DS=<goblin_math suffix: f32 f64 i32 i64 b8> and -DGM_IS_FLOAT for floats;
// the per-element math is goblin_math.h, the same code the CPU reference runs.

__kernel void unary(__global const T* x, __global T* out, const int op, const int tanh_gelu) {
    const size_t i = get_global_id(0);
#ifdef GM_IS_FLOAT
    out[i] = GM_CAT(gm_unary_, S)(op, x[i], tanh_gelu);
#else
    out[i] = GM_CAT(gm_unary_, S)(op, x[i]);
#endif
}

// isnan and logical_not: → bool.
__kernel void unary_to_bool(__global const T* x, __global uchar* out, const int op) {
    const size_t i = get_global_id(0);
    const T v = x[i];
    out[i] = op == GM_OP_ISNAN ? (uchar)IS_NAN(v) : (uchar)(v == (T)0);
}

__kernel void binary(__global const T* a, __global const T* b, __global T* out,
                     __global const long* layout, const int op) {
    const size_t i = get_global_id(0);
    out[i] = GM_CAT(gm_binary_, S)(op, a[strided_offset(i, layout, 0)], b[strided_offset(i, layout, 1)]);
}

__kernel void binary_to_bool(__global const T* a, __global const T* b, __global uchar* out,
                             __global const long* layout, const int op) {
    const size_t i = get_global_id(0);
    out[i] = (uchar)GM_CAT(gm_predicate_, S)(op, a[strided_offset(i, layout, 0)],
                                             b[strided_offset(i, layout, 1)]);
}

// Integer division: any zero divisor fails the whole op (checked before computing, as PyTorch).
__kernel void find_zero(__global const T* b, __global int* error) {
    if (b[get_global_id(0)] == (T)0)
        raise_error(error, 1);
}

__kernel void where_select(__global const uchar* condition, __global const T* a, __global const T* b,
                           __global T* out, __global const long* layout) {
    const size_t i = get_global_id(0);
    out[i] = condition[strided_offset(i, layout, 0)] ? a[strided_offset(i, layout, 1)]
                                                     : b[strided_offset(i, layout, 2)];
}

// min(max(x, lo), hi): NaN stays NaN; lo > hi gives hi.
__kernel void clamp_values(__global const T* x, __global T* out, const int has_low, const T low,
                           const int has_high, const T high) {
    const size_t i = get_global_id(0);
    T v = x[i];
    if (!IS_NAN(v) && has_low && v < low)
        v = low;
    if (!IS_NAN(v) && has_high && v > high)
        v = high;
    out[i] = v;
}
