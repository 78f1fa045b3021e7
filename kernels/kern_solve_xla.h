/* kern_solve_xla: X = (I + S)^-1 for a strictly lower triangular S (n x n)
 * as XLA's TriangularSolveExpander runs it on TPU (openxla/xla
 * xla/service/triangular_solve_expander.cc, read 2026) -- the in-chunk solve
 * of kern_config's KERN_SOLVE_XLA_EXPANDER, shared by GDN's chunked kernels
 * (kern_chunk_tmpl.h) and KDA's (kern_kda_chunk_tmpl.h), which call it on
 * their chunk's matrix.
 *
 * With n below the expander's block size (128 by default; a block of
 * min(128, n)) the whole matrix is one diagonal block, and n < 32 would
 * only pick the direct solve on a backend that asks for it (TPU's choice is
 * not public: assumed the blocked inverse).  Rounding points:
 *   L = I + S        in place of S (mask then add I: exact), divided by its
 *                    diagonal (1: exact);
 *   X                starts as diag(1, -1, ..., -1) (off the diagonal -0);
 *   row i            for i = 1 .. n-1 ascending, X_i. = -(L_i. X): one
 *                    1 x n x n dot at PrecisionConfig HIGHEST (kern_mm
 *                    HIGHEST: 6 bf16 passes, each accumulated over the
 *                    whole row, m = 0 .. n-1 ascending, including
 *                    L_ii X_i. = -e_i and the zeros beyond i; then the
 *                    passes summed in XLA's order), negated (exact);
 *   X / diag, X I    1: exact; the solve X I at HIGHEST is exact (I's parts
 *                    are I, 0, 0, and p0 + p1 + p2 = x exactly: kern_mm.h)
 *                    and is skipped.
 * float64: plain IEEE products in the same order -- the very sums forward
 * substitution with fma forms (the extra terms are exact zeros and the
 * diagonal's exact 1, and round(-x) = -round(x)), so in float64 both solves
 * give the same values.  TPU's MXU accumulation order within a pass is not
 * public; this is kern_mm's (ascending, fma).  X's upper triangle comes out
 * as zeros (+-0).
 *
 * Zero padding: a block padded with rows and columns of I (L) changes no
 * value of the real rows (each pass adds exact zeros; the padded X entries
 * are +-1 and +-0, so no pass's zero flag changes), so an n-row chunk
 * solves as the same chunk padded to C.
 *
 * Workspace (nothing here allocates or fails): sl and sx bound by
 * kern_split_bind for mode KERN_MATMUL_HIGHEST and at least n * n
 * elements; row n elements; ws kern_gemm's (kern_gemm_ws_elems).  Cost:
 * n - 1 dots of 6 passes of n^2 fma each, O(n^3). */
#ifndef KERN_SOLVE_XLA_H
#define KERN_SOLVE_XLA_H

#include <stdint.h>

#include "kern_mm.h"

/* L (n x n, leading dimension n): on entry S, strictly lower (zeros on and
 * above the diagonal); on return I + S.  X (n x n, leading dimension n,
 * not overlapping L): on return (I + S)^-1. */
void kern_solve_xla_f32(int64_t n, float *L, float *X, kern_split_f32 *sl, kern_split_f32 *sx, float *row,
                        float *ws);
void kern_solve_xla_f64(int64_t n, double *L, double *X, kern_split_f64 *sl, kern_split_f64 *sx, double *row,
                        double *ws);

#endif
