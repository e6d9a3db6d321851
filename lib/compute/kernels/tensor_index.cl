// Index arithmetic shared by the graph kernels (prepended after goblin_math.h). A "layout" buffer
// describes how the elements of an output map onto its inputs:
//   layout[0] = rank, layout[1 .. rank] = output dims,
//   layout[1 + rank + j·rank + d] = input j's element stride for output dim d (0 where it broadcasts).
#define GM_CAT2(a, b) a##b
#define GM_CAT(a, b) GM_CAT2(a, b)

// NaN test of the kernel's element type T (integers are never NaN; no self-comparison warnings).
#ifdef GM_IS_FLOAT
#define IS_NAN(v) ((v) != (v))
#else
#define IS_NAN(v) 0
#endif

// Offset into input `which` of the output element with flat (C order) index i.
long strided_offset(ulong i, __global const long* layout, int which) {
    const int rank = (int)layout[0];
    __global const long* dims = layout + 1;
    __global const long* strides = layout + 1 + rank + which * rank;
    long offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
        const ulong dim = (ulong)dims[d];
        offset += (long)(i % dim) * strides[d];
        i /= dim;
    }
    return offset;
}

// Runtime failures (integer division by zero, an index out of range) set *error; the host turns a
// set flag into an invalid_input error after the kernel.
void raise_error(__global int* error, int code) { atomic_or(error, code); }
