// Shape and dtype graph kernels: cast, strided gather (permute, expand), batched matmul.

#ifdef CAST_MODE
// -DFROM/-DTO types; CAST_MODE 0: the language's conversion (round to nearest to floats, wrapping
// to narrower integers), 1: to bool (x != 0), 2: float → integer through CAST_FN (saturating).
__kernel void cast_values(__global const FROM* x, __global TO* out) {
    const size_t i = get_global_id(0);
#if CAST_MODE == 1
    out[i] = (TO)(x[i] != (FROM)0);
#elif CAST_MODE == 2
    out[i] = CAST_FN(x[i]);
#else
    out[i] = (TO)x[i];
#endif
}
#endif

#ifdef E
// -DE = an unsigned type of the element's size: a copy that reads through a layout.
__kernel void gather_strided(__global const E* x, __global E* out, __global const long* layout) {
    const size_t i = get_global_id(0);
    out[i] = x[strided_offset(i, layout, 0)];
}
#endif

#ifdef T
// C[p] = A[batch_a[p]]·B[batch_b[p]]; one work-item per element of C, k summed in order.
__kernel void matmul(__global const T* a, __global const T* b, __global T* c,
                     __global const long* batch_a, __global const long* batch_b,
                     const long m, const long k, const long n) {
    const long g = (long)get_global_id(0);
    const long p = g / (m * n);
    const long i = (g % (m * n)) / n;
    const long j = g % n;
    __global const T* pa = a + batch_a[p] * m * k + i * k;
    __global const T* pb = b + batch_b[p] * k * n + j;
    T acc = 0;
    for (long l = 0; l < k; ++l) {
#ifdef GM_IS_FLOAT
        acc = acc + pa[l] * pb[l * n];
#else
        acc = GM_CAT(gm_wrap_add_, S)(acc, GM_CAT(gm_wrap_mul_, S)(pa[l], pb[l * n]));
#endif
    }
    c[g] = acc;
}
#endif
