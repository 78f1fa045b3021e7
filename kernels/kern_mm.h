/* kern_mm: a matrix product in one of the matmul precision modes.
 *
 * C (m x n) = op(A) (m x k) . op(B) (k x n) as XLA computes a float32 `dot`
 * under jax.lax.Precision DEFAULT / HIGH / HIGHEST on TPU, or plainly
 * (IEEE).  Every product of the float kernels goes through kern_mm_fXX.
 *
 * Operands are kern_split_fXX: the float32 values x and, for the bf16 pass
 * modes, their bfloat16 parts, each stored with the layout of x so that the
 * same strided view (rs, cs: kern_gemm.h) applies to the values and to every
 * part.  kern_split_fill splits once; a split is reused by every product that
 * reads the same operand (kern_chunk_tmpl.h: K, W, Kt, h, v_new, A ...).
 *
 * Splitting (float32 x; XLA's DotAlgorithmRewriter, Split2xToBF16 /
 * Split3xToBF16, openxla/xla xla/service/gpu/transforms/
 * dot_algorithm_rewriter.cc, read 2025; TPU's own lowering is not public and
 * is assumed to implement the same published algorithms):
 *   trunc(y)  = y with the low 16 bits of its binary32 encoding cleared
 *               (XLA's Truncate, mask 0xFFFF0000): rounds toward zero to
 *               bfloat16, never overflows
 *   rn(y)     = y rounded to nearest-even bfloat16 (XLA's convert, gdn_bf16)
 *   DEFAULT   p0 = rn(x)                       (ALG_DOT_BF16_BF16_F32:
 *                                               convert both operands)
 *   HIGH      p0 = trunc(x), p1 = rn(x - p0)   (bf16_3x, Split2xToBF16)
 *   HIGHEST   p0 = trunc(x), r = x - p0, p1 = trunc(r), p2 = rn(r - p1)
 *                                              (bf16_6x, Split3xToBF16)
 * The differences are exact in float32: p0 (resp. p1) is x (resp. r) with
 * low significand bits cleared, so it has the same sign and exponent and the
 * difference is just those low bits (Sterbenz: p0 <= x <= 2 p0).  r has at
 * most 16 significant bits, r - p1 at most 8, so for HIGHEST p2 = r - p1
 * exactly and p0 + p1 + p2 = x exactly -- unless r - p1 has bits below
 * bfloat16's smallest subnormal 2^-133, possible only when |x| < 2^-110
 * (float32's ulp there is below 2^-133), or x is not finite (p0 = +-inf, the
 * differences NaN), or flush-to-zero flushes a tiny difference (kern_num.h).
 * For HIGH, p0 + p1 rounds r to 8 bits: |r| < 2^-7 |x| (r is below one
 * bfloat16 ulp of x, truncation leaving it the sign of x), |x - p0 - p1| <=
 * 2^-8 |r| < 2^-15 |x|.  For DEFAULT |x - p0| <= 2^-8 |x|.
 *
 * Passes (each a kern_gemm product of two parts: every product of bfloat16
 * values is exact in float32 and accumulates in float32, p ascending, fma)
 * and the order XLA sums them in (RewriteF32ToBF16X3 / X6, same file):
 *   IEEE      C = kern_gemm(x_A, x_B)                 (plain float32 or F)
 *   DEFAULT   C = hh                                  1 pass
 *   HIGH      C = nan0(lh + hl) + hh                  3 passes
 *   HIGHEST   C = nan0((((mm + hl) + lh) + hm) + mh) + hh    6 passes
 * where xy = dot(part x of A, part y of B), h/m/l = p0/p1/p2 (for HIGH, l =
 * p1), every `+` is one elementwise float32 addition of two finished pass
 * products (kern_gemm's SET then PLUS), and nan0 replaces NaN by +0 (XLA's
 * ReplaceNaNWithZeros: an infinite operand gives NaN low parts; the hh pass
 * alone then carries the infinity).  The passes left out are the smallest
 * terms: ll for HIGH (|lo| < 2^-7 |x|, so < 2^-14 |ab| per product, plus
 * the rounding of lo, < 2^-15 |ab|: about 2^-16 relative in a random-sign
 * dot, measured by test_mm); ml, lm, ll for HIGHEST (< 2^-20 |ab|, below the
 * float32 accumulation's own error).
 *
 * Skipped passes: a pass whose part of A or of B is identically zero (every
 * element +-0, recorded by kern_split_fill) is not computed: it would add
 * only signed zeros (its elements are sums of products with a zero factor)
 * or, when the other operand holds an infinity or NaN, NaN that nan0 then
 * removes.  So the result is bit-identical to computing it, except possibly
 * the sign of an element that is exactly zero.  This is what makes a product
 * of bfloat16-valued operands (compute dtype bfloat16: (k beta) K^T, Q K^T)
 * a single pass in every mode, as XLA's bf16 x bf16 dot is, and halves
 * HIGHEST for a bfloat16-valued operand times a float32 one (W h, A V_beta).
 *
 * float64 compute: the mode is ignored (IEEE); a split holds only x.
 *
 * Cost: IEEE 1, DEFAULT 1, HIGH 3, HIGHEST 6 gemms of m n k fma each (fewer
 * when parts are zero), plus O(m n) for the additions and O(size) per split.
 * Memory: a split of n elements needs kern_split_elems_fXX(mode, n)
 * elements (0 for IEEE: it then points at x); `ws` is kern_gemm's.  No
 * allocation here; nothing can fail.
 */
#ifndef KERN_MM_H
#define KERN_MM_H

#include <stddef.h>
#include <stdint.h>

#include "kern_config.h"

/* Number of bfloat16 parts a float32 operand is split into: 0 (IEEE), 1, 2, 3. */
int kern_mm_parts(kern_matmul mode);
/* Number of bfloat16 x bfloat16 passes of a product (IEEE: 1 plain product). */
int kern_mm_passes(kern_matmul mode);

typedef struct kern_split_f32 {
  const float *x;  /* the values (IEEE, and the source of the parts) */
  float *part[3];  /* p0 (hi), p1 (mid, or lo for HIGH), p2 (lo); layout of x */
  size_t n;        /* elements of storage each part has */
  unsigned nz;     /* bit i: part i has an element that is not +-0 (bit 0 always set) */
} kern_split_f32;

typedef struct kern_split_f64 {
  const double *x;
  double *part[3]; /* unused: float64 products are IEEE */
  size_t n;
  unsigned nz;
} kern_split_f64;

size_t kern_split_elems_f32(kern_matmul mode, size_t n);
size_t kern_split_elems_f64(kern_matmul mode, size_t n); /* 0 */

/* Binds storage for parts of up to n elements: mem has
 * kern_split_elems(mode, n) elements (may be NULL when that is 0). */
void kern_split_bind_f32(kern_split_f32 *s, kern_matmul mode, float *mem, size_t n);
void kern_split_bind_f64(kern_split_f64 *s, kern_matmul mode, double *mem, size_t n);

/* s holds x[0 .. n) (n <= the bound size) split for `mode`; x must stay
 * valid and unchanged while s is used. */
void kern_split_fill_f32(kern_split_f32 *s, kern_matmul mode, const float *x, size_t n);
void kern_split_fill_f64(kern_split_f64 *s, kern_matmul mode, const double *x, size_t n);

/* The block of columns [c0, c1) of the rows x ld matrix x: s->x = x and
 * the parts of those elements (stored where kern_split_fill would store
 * them); s->nz is left alone.  Returns the zero flags of the block (bit i:
 * part i has an element that is not +-0 there; bit 0 always set).  A team
 * splitting one matrix block by block ORs the blocks' flags into s->nz, which
 * then equals kern_split_fill's for the whole matrix. */
unsigned kern_split_fill_cols_f32(kern_split_f32 *s, kern_matmul mode, const float *x,
                                  int64_t rows, int64_t ld, int64_t c0, int64_t c1);
unsigned kern_split_fill_cols_f64(kern_split_f64 *s, kern_matmul mode, const double *x,
                                  int64_t rows, int64_t ld, int64_t c0, int64_t c1);

/* C = op(A) op(B) in `mode` (SET semantics; C must not overlap A, B or
 * their parts). */
void kern_mm_f32(kern_matmul mode, int64_t m, int64_t n, int64_t k, const kern_split_f32 *a,
                 int64_t a_rs, int64_t a_cs, const kern_split_f32 *b, int64_t b_rs,
                 int64_t b_cs, float *c, int64_t ldc, float *ws);
void kern_mm_f64(kern_matmul mode, int64_t m, int64_t n, int64_t k, const kern_split_f64 *a,
                 int64_t a_rs, int64_t a_cs, const kern_split_f64 *b, int64_t b_rs,
                 int64_t b_cs, double *c, int64_t ldc, double *ws);

/* C = C + op(A) op(B) in `mode`: the product formed completely, then added
 * elementwise (one more rounding), as jnp's `c + a @ b`.  IEEE: one
 * kern_gemm PLUS, no temporary; the pass modes: the product into tmp (m x n,
 * leading dimension ldt), then the additions. */
void kern_mm_plus_f32(kern_matmul mode, int64_t m, int64_t n, int64_t k, const kern_split_f32 *a,
                      int64_t a_rs, int64_t a_cs, const kern_split_f32 *b, int64_t b_rs,
                      int64_t b_cs, float *c, int64_t ldc, float *tmp, int64_t ldt, float *ws);
void kern_mm_plus_f64(kern_matmul mode, int64_t m, int64_t n, int64_t k, const kern_split_f64 *a,
                      int64_t a_rs, int64_t a_cs, const kern_split_f64 *b, int64_t b_rs,
                      int64_t b_cs, double *c, int64_t ldc, double *tmp, int64_t ldt, double *ws);

/* The parts of one value (exposed for tests): p[0..2], zeros beyond the mode's parts. */
void kern_split_value_f32(kern_matmul mode, float x, float p[3]);

#endif
