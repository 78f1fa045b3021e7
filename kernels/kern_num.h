/* kern_num: the numerics one kernel call runs with, resolved from kern_config,
 * the hooks where the compute dtype's rounding points go, and flush-to-zero.
 *
 * kern_num_init resolves a config (it refuses nothing that kern_config can
 * express, except ftz off x86-64 and an unknown enum value):
 *   dtype   FLOAT32   every step in float32.
 *           BFLOAT16  MaxText's jax_chunk_gated_delta_rule with compute_dtype
 *                     = bfloat16: the float32 kernels with the rounding points
 *                     below switched on; g, its cumsum, exp, the solve and
 *                     the carried state stay float32.
 *           FLOAT64   every step in float64.
 *   matmul  as given for FLOAT32 and BFLOAT16 (kern_mm.h); FLOAT64 ignores
 *           it (IEEE).
 *   ftz     as given for FLOAT32 and BFLOAT16; FLOAT64 ignores it (a TPU has
 *           no float64; flushing float64 subnormals would model nothing).
 * kern_num_describe says what was resolved, in words, for the harness.
 *
 * Rounding points (compute dtype BFLOAT16; round_mask = all of them; for
 * FLOAT32 and FLOAT64 the mask is 0 and every hook is the identity).  Each
 * rounds float32 -> bfloat16 to nearest, ties to even (gdn_bf16_round), as
 * XLA's convert.  In the order a chunk meets them (MaxText qwen3.py,
 * jax_chunk_gated_delta_rule, read 2025):
 *   KERN_RP_INPUT     `query.astype(compute_dtype)` etc.: q and k (after the
 *                     optional in-kernel L2 norm, which MaxText applies before
 *                     the cast, in the input dtype: float32 here), v and beta.
 *                     g is `astype(float32)`: not rounded.
 *   KERN_RP_Q_SCALE   `rsqrt(float32 Dk).astype(bf16)`: the scale constant
 *                     itself (0.08837890625 for Dk = 128; a given scale is
 *                     rounded too), then `query * scale`: the product of two
 *                     bfloat16 values is exact in float32 and rounded once.
 *   KERN_RP_BETA_MUL  `k_beta = k * beta`, `v_beta = v * beta`: bf16 x bf16
 *                     products, rounded once each.
 *   KERN_RP_KKT       `S = matmul(k_beta, K^T)`: a bf16 x bf16 dot, f32
 *                     accumulation, output dtype bfloat16 (rounded), then
 *                     `.astype(float32)`; before the decay mask.
 *   KERN_RP_UW        `u = matmul(A, v_beta.astype(f32)).astype(bf16)`,
 *                     `w = matmul(A, k_beta.astype(f32) * exp(G)).astype(bf16)`:
 *                     U and W rounded after their float32 products.
 *   KERN_RP_QKT       in the scan body, `attn = matmul(q, K^T)`: bf16 x bf16,
 *                     output bfloat16, then `.astype(float32)`; before the
 *                     decay mask.
 * Everything else -- q * exp(G), k_beta * exp(G), k * exp(G_C - G), the masks
 * and decays, the solve, o and the state update -- is float32, computed from
 * the rounded values.  o is cast to the input dtype at the end
 * (kern_output_dtype).  The token recurrence (kern_recurrent) has only the
 * first two points (it forms no k_beta, S, U, W or attn).
 *
 * Flush-to-zero (FLOAT32, BFLOAT16 with cfg->ftz), as TPU does:
 *   - inputs: every element of q, k, v, g, beta and h0 that is subnormal is
 *     read as a zero of its sign (kern_num_in_f32: loading is a copy, not an
 *     arithmetic step, so this is done in software);
 *   - every arithmetic step: the parallel regions of the kernels run with the
 *     x86 MXCSR's FTZ and DAZ bits set (kern_fpenv_enter / _leave), so every
 *     SSE/AVX instruction -- each elementwise add, multiply, divide, sqrt,
 *     the float32 conversions inside expf, and inside kern_gemm each product
 *     and each fma of the accumulation -- reads subnormal operands as zero
 *     and returns zero (sign of the exact result) for a result that is tiny,
 *     x86 detecting tininess after rounding to 24 bits with unbounded
 *     exponent (so FLT_MIN (1 - 2^-24), which would round up to FLT_MIN with
 *     gradual underflow, is flushed too: checked by test_ftz);
 *   - values made by bit manipulation (bfloat16 rounding, the truncations of
 *     kern_mm's split) are never subnormal when their source is normal.
 *   Granularity is therefore every operation, as on the TPU's vector and
 *   matrix units (whose exact tininess rule is not published).  The compiler
 *   may move floating-point arithmetic across an MXCSR write (it does not
 *   model the FP environment), so the flushed work must be in a function
 *   that is not inlined, called between enter and leave (the kernels' *_run
 *   workers).  ftz = 0 never touches the MXCSR: results are then bit for
 *   bit what they were before ftz existed.
 */
#ifndef KERN_NUM_H
#define KERN_NUM_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_bf16.h"
#include "gdn_dtype.h"
#include "gdn_error.h"
#include "gdn_inputs.h"
#include "kern_config.h"

enum {
  KERN_RP_INPUT = 1u << 0,    /* q, k (after the L2 norm), v, beta cast to bf16 */
  KERN_RP_Q_SCALE = 1u << 2,  /* the scale constant and q * scale */
  KERN_RP_BETA_MUL = 1u << 3, /* k * beta and v * beta */
  KERN_RP_KKT = 1u << 4,      /* (k beta) K^T, before the decay mask */
  KERN_RP_QKT = 1u << 5,      /* Q K^T, before the decay mask */
  KERN_RP_UW = 1u << 6,       /* U and W */
  KERN_RP_BF16_ALL = KERN_RP_INPUT | KERN_RP_Q_SCALE | KERN_RP_BETA_MUL | KERN_RP_KKT |
                     KERN_RP_QKT | KERN_RP_UW,
};

typedef struct kern_num {
  gdn_dtype dtype;     /* compute dtype as configured */
  kern_matmul matmul;  /* effective (IEEE for float64) */
  int ftz;             /* effective (0 for float64) */
  unsigned round_mask; /* KERN_RP_* bits that round to bfloat16 */
  kern_solve solve;    /* the in-chunk triangular solve */
} kern_num;

/* `who` names the kernel for the message ("kern_scan"). */
int kern_num_init(kern_num *num, const kern_config *cfg, const char *who, gdn_error *e);

/* Everything a kernel checks before it allocates: the shape
 * (gdn_shape_validate), for the chunked kernels (`chunked` != 0) the chunk
 * and device count (kern_config_validate), then kern_num_init.  Messages are
 * prefixed with `who`. */
int kern_num_setup(kern_num *num, const gdn_inputs *in, const kern_config *cfg, const char *who,
                   int chunked, gdn_error *e);

/* One line for the harness's output: the compute dtype, the rounding points,
 * the matmul mode and its passes, ftz -- and what float64 ignores, e.g.
 *   "bfloat16 compute (MaxText rounding points: ...); matmul default: 1 bf16
 *    pass (operands rounded to bf16), f32 accumulation (...); ftz on (...)"
 *   "float64 compute; matmul ieee (--matmul-precision highest ignored:
 *    float64 products are plain IEEE); ftz ignored (float64)".
 * Writes at most cap bytes (NUL-terminated); GDN_ERR_INPUT as kern_num_init. */
int kern_num_describe(const kern_config *cfg, char *buf, size_t cap, gdn_error *e);

/* Round x[0 .. n) at rounding point `rp` (identity unless rp is in the mask). */
static inline void kern_num_round_f32(const kern_num *num, unsigned rp, float *x, int64_t n) {
  if (!(num->round_mask & rp)) return;
  for (int64_t i = 0; i < n; i++) x[i] = gdn_bf16_round(x[i]);
}

/* An input element as the kernel reads it: flushed to a zero of its sign
 * when ftz and subnormal (bit test: no arithmetic). */
static inline float kern_num_in_f32(const kern_num *num, float x) {
  uint32_t u = gdn_f32_bits(x);
  return (num->ftz && (u & 0x7f800000u) == 0) ? gdn_f32_from_bits(u & 0x80000000u) : x;
}

/* Enter / leave the flush-to-zero environment of one thread: with num->ftz
 * set FTZ | DAZ in the MXCSR and return the previous MXCSR; otherwise do
 * nothing.  Never inlined (see above). */
unsigned kern_fpenv_enter(const kern_num *num);
void kern_fpenv_leave(const kern_num *num, unsigned saved);

#endif
