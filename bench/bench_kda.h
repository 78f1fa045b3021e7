/* bench_kda: section 7 of bench_kernels (--kda-reps N): the KDA kernels'
 * time per token next to GDN's at the same shape and thread count. */
#ifndef BENCH_KDA_H
#define BENCH_KDA_H

#include <stdint.h>

#include <jansson.h>

/* H heads (B = 1, Hk = Hv = H, Dk = Dv = 128), T tokens, `threads`
 * threads, best of `reps` calls each, the four kernels interleaved call
 * after call.  Prints a line per kernel and the KDA / GDN ratios; adds
 * "kda" to root.  0, or 3 on an error (printed). */
int bench_kda_section(int64_t T, int64_t H, int threads, int reps, json_t *root);

#endif
