// Counts the elements of a buffer that are NaN or ±Inf. Built once per dtype with -DREAL=float or
// -DREAL=double (and -DGOBLIN_FP64 for double). Each work-group reduces its slice in local memory
// and adds one number to *count, so a product with no bad values costs one atomic per group.
#ifdef GOBLIN_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

__kernel void count_nonfinite(__global const REAL* values, const ulong n,
                              __global uint* count, __local uint* scratch) {
    const size_t local_id = get_local_id(0);
    const size_t group_size = get_local_size(0);
    uint bad = 0;
    // Grid-stride loop: the global size need not cover n.
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) {
        const REAL v = values[i];
        bad += (isnan(v) || isinf(v)) ? 1u : 0u;
    }
    scratch[local_id] = bad;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t stride = group_size / 2; stride > 0; stride /= 2) {
        if (local_id < stride)
            scratch[local_id] += scratch[local_id + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (local_id == 0 && scratch[0] != 0)
        atomic_add(count, scratch[0]);
}
