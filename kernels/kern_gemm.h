/* kern_gemm: the one matrix product of the float kernels.
 *
 *   C (m x n)  =  op(A) (m x k) . op(B) (k x n)        KERN_GEMM_SET
 *   C (m x n) +=  op(A) . op(B)                        KERN_GEMM_ADD
 *
 * Operands are strided views: element (r, c) of A is a[r * a_rs + c * a_cs],
 * so a transposed operand is the same memory with the strides swapped
 * (A = X^T for a row-major X with leading dimension ld: a_rs = 1, a_cs = ld).
 * C is row-major with leading dimension ldc and must not overlap A or B.
 *
 * Reduction order (KERN_MATMUL_IEEE; the contract every kernel relies on):
 * for each output element, independently of every other one,
 *   SET:  c = a_i0 * b_0j;  then for p = 1 .. k-1:  c = fma(a_ip, b_pj, c)
 *   ADD:  c = C_ij;         then for p = 0 .. k-1:  c = fma(a_ip, b_pj, c)
 * in the compute format (fmaf for float32: one rounding per step).  k = 0
 * gives C = 0 (SET) or leaves C unchanged (ADD).  The result is therefore
 * bit-identical to the naive triple loop with that order, whatever the
 * block sizes, vector width or thread count: blocking is over i and j
 * (independent outputs) and over p only by storing the running sum to C and
 * resuming it, which is exact because the accumulator is the compute format.
 *
 * Structure (for speed; results do not depend on it): Goto-style blocking
 * NC = 128 columns x KC = 128 inner x MC = 72 rows.  B's KC x NC block is
 * packed into NR-column panels (a transposed B is read along its rows while
 * packing); when B's rows are contiguous (b_cs == 1) it is read in place and
 * only a partial last panel is copied, zero-padded.  A is read in place
 * (row-major and transposed A both give short sequential streams).  A
 * register-blocked micro-kernel keeps an mr x NR tile of C in registers
 * (mr <= MR = 6, NR = 16 floats or 8 doubles: 12 AVX2 accumulators),
 * broadcasts a_ip and loads a vector of row p of B.  Plain C, vectorised by
 * gcc (-O2 with `#pragma GCC unroll` over the tile rows).  The packed block
 * is 64 KiB (float32) / 128 KiB (float64): it stays in L2 while the C tiles
 * of a D = 128 matrix stream past it.
 *
 * Precision modes: `mode` is the kern_matmul of the config.  IEEE is the
 * order above.  The bfloat16 multi-pass modes (DEFAULT / HIGH / HIGHEST) will
 * be built on the same core, each pass a product of bfloat16 parts (exact in
 * float32) accumulated in float32 with ADD; until then calling with a mode
 * kern_gemm_supported refuses is a contract violation and C is set to NaN
 * so the misuse cannot pass silently.  float64 ignores the mode (IEEE).
 *
 * Workspace: `ws` has kern_gemm_ws_elems_fXX(mode) elements of the compute
 * type (64-byte aligned, e.g. from gdn_malloc), private to the calling
 * thread.  No allocation happens here; the functions cannot fail.
 */
#ifndef KERN_GEMM_H
#define KERN_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_dtype.h"
#include "gdn_error.h"
#include "kern_config.h"

typedef enum kern_gemm_acc {
  KERN_GEMM_SET = 0, /* C  = A B, the sum starts from the first product */
  KERN_GEMM_ADD = 1, /* C += A B, the sum starts from the existing C */
} kern_gemm_acc;

/* GDN_OK when kern_gemm_* implements `mode` for compute dtype `dtype`, else
 * GDN_ERR_INPUT naming the mode ("... is not supported yet"). */
int kern_gemm_supported(kern_matmul mode, gdn_dtype dtype, gdn_error *e);

size_t kern_gemm_ws_elems_f32(kern_matmul mode);
size_t kern_gemm_ws_elems_f64(kern_matmul mode);

void kern_gemm_f32(kern_matmul mode, kern_gemm_acc acc, int64_t m, int64_t n, int64_t k,
                   const float *a, int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs,
                   int64_t b_cs, float *c, int64_t ldc, float *ws);
void kern_gemm_f64(kern_matmul mode, kern_gemm_acc acc, int64_t m, int64_t n, int64_t k,
                   const double *a, int64_t a_rs, int64_t a_cs, const double *b, int64_t b_rs,
                   int64_t b_cs, double *c, int64_t ldc, double *ws);

#endif
