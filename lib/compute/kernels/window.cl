// Window graph kernels (catalog 3): conv2d and its gradients, max_pool2d values / indices and its
// gradient. One work-item per output element, looping in the reference's fixed order (conv2d: c,
// kh, kw; input grad: o, kh, kw; weight grad: n, oh, ow; pool: row-major window), so the two agree
// bit for bit. -DT/-DS/-DGM_IS_FLOAT of the values.
//
// conv geometry: n c h w o ci kh kw oh ow groups stride_y stride_x pad_y pad_x dil_y dil_x
enum { CN, CC, CH, CW, CO, CI, CKH, CKW, COH, COW, CG, CSY, CSX, CPY, CPX, CDY, CDX };

__kernel void conv2d_forward(__global const T* x, __global const T* w, __global const long* g, __global T* y) {
    const long at = (long)get_global_id(0);
    const long ox = at % g[COW], oy = (at / g[COW]) % g[COH], oc = (at / (g[COW] * g[COH])) % g[CO];
    const long b = at / (g[COW] * g[COH] * g[CO]);
    const long first = oc / (g[CO] / g[CG]) * g[CI];
    T acc = 0;
    for (long ch = 0; ch < g[CI]; ++ch)
        for (long ky = 0; ky < g[CKH]; ++ky) {
            const long iy = oy * g[CSY] - g[CPY] + ky * g[CDY];
            if (iy < 0 || iy >= g[CH])
                continue;
            for (long kx = 0; kx < g[CKW]; ++kx) {
                const long ix = ox * g[CSX] - g[CPX] + kx * g[CDX];
                if (ix >= 0 && ix < g[CW])
                    acc = acc + x[((b * g[CC] + first + ch) * g[CH] + iy) * g[CW] + ix] *
                                    w[((oc * g[CI] + ch) * g[CKH] + ky) * g[CKW] + kx];
            }
        }
    y[at] = acc;
}

// The output position that reads input position `in` through kernel tap `k`, or −1.
long output_of(long in, long k, long stride, long padding, long dilation, long out_size) {
    const long shifted = in + padding - k * dilation;
    if (shifted < 0 || shifted % stride != 0 || shifted / stride >= out_size)
        return -1;
    return shifted / stride;
}

__kernel void conv2d_input_grad(__global const T* gy, __global const T* w, __global const long* g, __global T* gx) {
    const long at = (long)get_global_id(0);
    const long ix = at % g[CW], iy = (at / g[CW]) % g[CH], ch = (at / (g[CW] * g[CH])) % g[CC];
    const long b = at / (g[CW] * g[CH] * g[CC]);
    const long per_group = g[CO] / g[CG];
    const long group = ch / g[CI], in_group = ch % g[CI];
    T acc = 0;
    for (long oc = group * per_group; oc < (group + 1) * per_group; ++oc)
        for (long ky = 0; ky < g[CKH]; ++ky) {
            const long oy = output_of(iy, ky, g[CSY], g[CPY], g[CDY], g[COH]);
            if (oy < 0)
                continue;
            for (long kx = 0; kx < g[CKW]; ++kx) {
                const long ox = output_of(ix, kx, g[CSX], g[CPX], g[CDX], g[COW]);
                if (ox >= 0)
                    acc = acc + gy[((b * g[CO] + oc) * g[COH] + oy) * g[COW] + ox] *
                                    w[((oc * g[CI] + in_group) * g[CKH] + ky) * g[CKW] + kx];
            }
        }
    gx[at] = acc;
}

__kernel void conv2d_weight_grad(__global const T* x, __global const T* gy, __global const long* g, __global T* gw) {
    const long at = (long)get_global_id(0);
    const long kx = at % g[CKW], ky = (at / g[CKW]) % g[CKH], ch = (at / (g[CKW] * g[CKH])) % g[CI];
    const long oc = at / (g[CKW] * g[CKH] * g[CI]);
    const long first = oc / (g[CO] / g[CG]) * g[CI];
    T acc = 0;
    for (long b = 0; b < g[CN]; ++b)
        for (long oy = 0; oy < g[COH]; ++oy) {
            const long iy = oy * g[CSY] - g[CPY] + ky * g[CDY];
            if (iy < 0 || iy >= g[CH])
                continue;
            for (long ox = 0; ox < g[COW]; ++ox) {
                const long ix = ox * g[CSX] - g[CPX] + kx * g[CDX];
                if (ix >= 0 && ix < g[CW])
                    acc = acc + gy[((b * g[CO] + oc) * g[COH] + oy) * g[COW] + ox] *
                                    x[((b * g[CC] + first + ch) * g[CH] + iy) * g[CW] + ix];
            }
        }
    gw[at] = acc;
}

// pool geometry: planes h w oh ow kernel_y kernel_x stride_y stride_x pad_y pad_x dil_y dil_x
enum { PP, PH, PW, POH, POW, PKY, PKX, PSY, PSX, PPY, PPX, PDY, PDX };

// The in-plane index of the window's first maximum (a NaN beats every number, the first NaN
// wins), or −1 for a window with no element inside the input.
long window_argmax(__global const T* plane, __global const long* g, long oy, long ox) {
    long best = -1;
    for (long ky = 0; ky < g[PKY]; ++ky) {
        const long iy = oy * g[PSY] - g[PPY] + ky * g[PDY];
        if (iy < 0 || iy >= g[PH])
            continue;
        for (long kx = 0; kx < g[PKX]; ++kx) {
            const long ix = ox * g[PSX] - g[PPX] + kx * g[PDX];
            if (ix < 0 || ix >= g[PW])
                continue;
            const long index = iy * g[PW] + ix;
            if (best < 0) {
                best = index;
                continue;
            }
            if (IS_NAN(plane[best]))
                return best;
            if (IS_NAN(plane[index]) || plane[index] > plane[best])
                best = index;
        }
    }
    return best;
}

__kernel void max_pool_values(__global const T* x, __global const long* g, __global T* out) {
    const long at = (long)get_global_id(0);
    const long ox = at % g[POW], oy = (at / g[POW]) % g[POH], plane = at / (g[POW] * g[POH]);
    const long best = window_argmax(x + plane * g[PH] * g[PW], g, oy, ox);
    out[at] = best < 0 ? (T)(-INFINITY) : x[plane * g[PH] * g[PW] + best];
}

__kernel void max_pool_indices(__global const T* x, __global const long* g, __global long* out) {
    const long at = (long)get_global_id(0);
    const long ox = at % g[POW], oy = (at / g[POW]) % g[POH], plane = at / (g[POW] * g[POH]);
    out[at] = window_argmax(x + plane * g[PH] * g[PW], g, oy, ox);
}

// One work-item per input element: the gradients of the windows whose argmax it is, added in
// output order (the reference scatters in that order).
__kernel void max_pool_backward(__global const T* grad_out, __global const long* argmax, __global const long* g,
                                __global T* grad_in) {
    const long at = (long)get_global_id(0);
    const long index = at % (g[PH] * g[PW]), plane = at / (g[PH] * g[PW]);
    const long iy = index / g[PW], ix = index % g[PW];
    // Windows that can hold (iy, ix): oy·s − p + k·d = iy for some k in [0, kernel).
    const long oy_first = max(0L, (iy + g[PPY] - (g[PKY] - 1) * g[PDY] + g[PSY] - 1) / g[PSY]);
    const long oy_last = min(g[POH] - 1, (iy + g[PPY]) / g[PSY]);
    const long ox_first = max(0L, (ix + g[PPX] - (g[PKX] - 1) * g[PDX] + g[PSX] - 1) / g[PSX]);
    const long ox_last = min(g[POW] - 1, (ix + g[PPX]) / g[PSX]);
    T acc = 0;
    for (long oy = oy_first; oy <= oy_last; ++oy)
        for (long ox = ox_first; ox <= ox_last; ++ox) {
            const long o = (plane * g[POH] + oy) * g[POW] + ox;
            if (argmax[o] == index)
                acc = acc + grad_out[o];
        }
    grad_in[at] = acc;
}
