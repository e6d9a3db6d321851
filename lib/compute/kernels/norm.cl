// layer_norm graph kernels (catalog 3): per row of k normalised elements, in the input dtype,
// mean = Σx/k, var = Σ(x − mean)²/k (two passes, biased), rstd = 1/√(var + eps), sums sequential
// in C order exactly as the reference. -DT/-DS/-DGM_IS_FLOAT of the values.

void row_moments(__global const T* row, long k, T eps, T* mean, T* rstd) {
    T sum = 0;
    for (long j = 0; j < k; ++j)
        sum = sum + row[j];
    const T m = sum / (T)k;
    T squares = 0;
    for (long j = 0; j < k; ++j)
        squares = squares + (row[j] - m) * (row[j] - m);
    const T var = squares / (T)k;
    *mean = m;
    *rstd = (T)1 / sqrt(var + eps);
}

// y = ((x − mean)·rstd)·w + b, one work-item per row.
__kernel void layer_norm_rows(__global const T* x, __global const T* w, __global const T* b, const long k,
                              const T eps, __global T* y) {
    const long r = (long)get_global_id(0);
    __global const T* row = x + r * k;
    T mean, rstd;
    row_moments(row, k, eps, &mean, &rstd);
    for (long j = 0; j < k; ++j)
        y[r * k + j] = (row[j] - mean) * rstd * w[j] + b[j];
}

// Per row: its mean and rstd (for the weight gradient's columns).
__kernel void layer_norm_moments(__global const T* x, const long k, const T eps, __global T* moments) {
    const long r = (long)get_global_id(0);
    T mean, rstd;
    row_moments(x + r * k, k, eps, &mean, &rstd);
    moments[2 * r] = mean;
    moments[2 * r + 1] = rstd;
}

// dx = (g·w − Σ(g·w)/k − x̂·Σ(g·w·x̂)/k)·rstd, one work-item per row.
__kernel void layer_norm_input_grad(__global const T* grad, __global const T* x, __global const T* w, const long k,
                                    const T eps, __global T* dx) {
    const long r = (long)get_global_id(0);
    __global const T* row = x + r * k;
    __global const T* g = grad + r * k;
    T mean, rstd;
    row_moments(row, k, eps, &mean, &rstd);
    T sum_dy = 0, sum_dy_xhat = 0;
    for (long j = 0; j < k; ++j) {
        const T dy = g[j] * w[j];
        sum_dy = sum_dy + dy;
        sum_dy_xhat = sum_dy_xhat + dy * ((row[j] - mean) * rstd);
    }
    const T mean_dy = sum_dy / (T)k;
    const T mean_dy_xhat = sum_dy_xhat / (T)k;
    for (long j = 0; j < k; ++j) {
        const T xhat = (row[j] - mean) * rstd;
        dx[r * k + j] = (g[j] * w[j] - mean_dy - xhat * mean_dy_xhat) * rstd;
    }
}

// weight: Σ_rows g·x̂; bias: Σ_rows g — one work-item per column, rows in order.
__kernel void layer_norm_param_grad(__global const T* grad, __global const T* x, __global const T* moments,
                                    const long rows, const long k, const int bias, __global T* out) {
    const long j = (long)get_global_id(0);
    T acc = 0;
    for (long r = 0; r < rows; ++r) {
        const T g = grad[r * k + j];
        acc = bias ? acc + g : acc + g * ((x[r * k + j] - moments[2 * r]) * moments[2 * r + 1]);
    }
    out[j] = acc;
}
