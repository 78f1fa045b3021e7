/* kern_gemm: the one matrix-product engine of the float kernels.
 *
 *   C (m x n)  =      op(A) (m x k) . op(B) (k x n)           KERN_GEMM_SET
 *   C (m x n) +=      op(A) . op(B)                           KERN_GEMM_ADD
 *   C (m x n)  = C + (op(A) . op(B))                          KERN_GEMM_PLUS
 *
 * Operands are strided views: element (r, c) of A is a[r * a_rs + c * a_cs],
 * so a transposed operand is the same memory with the strides swapped
 * (A = X^T for a row-major X with leading dimension ld: a_rs = 1, a_cs = ld).
 * C is row-major with leading dimension ldc and must not overlap A or B.
 *
 * Reduction order (the contract every kernel relies on): for each output
 * element, independently of every other one,
 *   SET:   c = a_i0 * b_0j;  then for p = 1 .. k-1:  c = fma(a_ip, b_pj, c)
 *   ADD:   c = C_ij;         then for p = 0 .. k-1:  c = fma(a_ip, b_pj, c)
 *   PLUS:  d = the SET sum above;  C_ij = C_ij + d   (one more rounding: the
 *          sum of two separately formed products, as XLA's `add(dot, dot)`
 *          that combines the bf16 passes of a multi-pass product, kern_mm.h)
 * in the compute format (fmaf for float32: one rounding per step).  k = 0
 * gives C = 0 (SET) or leaves C unchanged (ADD, PLUS).  The result is
 * bit-identical to the naive triple loop with that order, whatever the block
 * sizes, vector width or thread count: blocking is over i and j (independent
 * outputs) and over p only by storing the running sum and resuming it, which
 * is exact because the accumulator is the compute format (for PLUS with
 * k > KC the running sum d is kept in an MC x NC block of the workspace and
 * added to C once complete).
 *
 * This is the IEEE product (KERN_MATMUL_IEEE) and, applied to bfloat16-valued
 * float32 arrays, one pass of the bf16 multi-pass modes: a product of two
 * bfloat16 values (8-bit significands) is exact in float32 (24 bits), so each
 * fma of a pass rounds only the accumulation, as an MXU pass accumulating in
 * float32 does.  The precision modes themselves (splitting, pass set, the
 * order the passes are summed in) are kern_mm.h.
 *
 * Structure (for speed; results do not depend on it): Goto-style blocking
 * NC = 128 columns x KC = 128 inner x MC rows.  B's KC x NC block is packed
 * into zero-padded NR-column panels and A's MC x KC block into zero-padded
 * MR-row panels (always: the kernels' operands are rows of strided tensors,
 * whose power-of-two strides alias in L1 when read in place).  A row-major A
 * (and a transposed B) is packed across its contiguous index in 8 x 8
 * blocks transposed with AVX shuffles where the panel width is a multiple
 * of 8 (AVX-512's MR = 8; element by element for AVX2's MR = 6, where the
 * scalar transpose costs about a seventh of a 64 x 64 x 128 product's time,
 * bench_kernels section 5).  A
 * register-blocked micro-kernel keeps an MR x NR tile of C in registers,
 * broadcasts a_ip and loads a vector of row p of B: AVX-512F MR = 8,
 * NR = 32 floats / 16 doubles; AVX2 + FMA MR = 6, NR = 16 / 8; portable C
 * otherwise (kern_gemm.c picks by the compiler's target).  Padded rows and
 * columns are computed and never stored.  Flush-to-zero (kern_num.h) is the
 * caller's MXCSR; nothing here depends on it.  Subnormal operands are
 * correct but slow on an x86 core that takes microcoded assists for them
 * (~40x measured for a product with a third of A subnormal); AMD Zen 4
 * computes a vector fma on subnormals at full speed (docs/speed.md).
 *
 * Workspace: `ws` has kern_gemm_ws_elems_fXX() elements of the compute type
 * (64-byte aligned, e.g. from gdn_malloc), private to the calling thread:
 * the packed B block, the packed A block and the MC x NC block of PLUS.  No allocation happens here; the functions cannot fail.
 */
#ifndef KERN_GEMM_H
#define KERN_GEMM_H

#include <stddef.h>
#include <stdint.h>

typedef enum kern_gemm_acc {
  KERN_GEMM_SET = 0,  /* C  = A B, the sum starts from the first product */
  KERN_GEMM_ADD = 1,  /* C += A B, the sum starts from the existing C */
  KERN_GEMM_PLUS = 2, /* C  = C + (A B), A B summed from its first product */
} kern_gemm_acc;

size_t kern_gemm_ws_elems_f32(void);
size_t kern_gemm_ws_elems_f64(void);

void kern_gemm_f32(kern_gemm_acc acc, int64_t m, int64_t n, int64_t k, const float *a,
                   int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs, int64_t b_cs,
                   float *c, int64_t ldc, float *ws);
void kern_gemm_f64(kern_gemm_acc acc, int64_t m, int64_t n, int64_t k, const double *a,
                   int64_t a_rs, int64_t a_cs, const double *b, int64_t b_rs, int64_t b_cs,
                   double *c, int64_t ldc, double *ws);

#endif
