/* kern_num: the numerics one kernel call runs with, resolved from kern_config,
 * and the hooks where the compute dtype's rounding points go.
 *
 * kern_num_init checks what is implemented today and refuses the rest with
 * GDN_ERR_INPUT ("... not supported yet"):
 *   dtype     FLOAT32 and FLOAT64 (every step in that format);
 *             BFLOAT16 not yet.
 *   matmul    IEEE for FLOAT32 (kern_gemm.h); ignored for FLOAT64 (always
 *             IEEE, as kern_config.h says).  The bf16 multi-pass modes not yet.
 *   ftz       0 only (flush-to-zero not yet).
 *
 * Rounding points.  The float32 instantiation of the chunked kernels calls
 * kern_num_round_f32(num, KERN_RP_x, ...) at each place where MaxText with
 * compute_dtype = bfloat16 rounds a tensor to bfloat16 (algorithm.md,
 * "Rounding points").  A point rounds (nearest-even, gdn_bf16_round) only
 * when its bit is in num->round_mask; kern_num_init sets the mask to 0 for
 * FLOAT32 and FLOAT64, so today every hook is the identity and the float32
 * kernel is pure float32.  The bfloat16 mode will set the bits.
 */
#ifndef KERN_NUM_H
#define KERN_NUM_H

#include <stdint.h>

#include "gdn_bf16.h"
#include "gdn_dtype.h"
#include "gdn_error.h"
#include "gdn_inputs.h"
#include "kern_config.h"

enum {
  KERN_RP_INPUT = 1u << 0,    /* q, k, v, beta as read (before the L2 norm) */
  KERN_RP_QK_NORM = 1u << 1,  /* q, k after the L2 norm */
  KERN_RP_Q_SCALE = 1u << 2,  /* the scale constant and q * scale */
  KERN_RP_BETA_MUL = 1u << 3, /* k * beta and v * beta */
  KERN_RP_KKT = 1u << 4,      /* (k beta) K^T, before the decay mask */
  KERN_RP_QKT = 1u << 5,      /* Q K^T, before the decay mask */
  KERN_RP_UW = 1u << 6,       /* U and W */
};

typedef struct kern_num {
  gdn_dtype dtype;     /* compute dtype F */
  kern_matmul matmul;  /* for kern_gemm */
  int ftz;
  unsigned round_mask; /* KERN_RP_* bits that round to bfloat16 */
} kern_num;

/* `who` names the kernel for the message ("kern_scan"). */
int kern_num_init(kern_num *num, const kern_config *cfg, const char *who, gdn_error *e);

/* Everything a kernel checks before it allocates: the shape
 * (gdn_shape_validate), for the chunked kernels (`chunked` != 0) the chunk
 * and device count (kern_config_validate), then kern_num_init.  Messages are
 * prefixed with `who`. */
int kern_num_setup(kern_num *num, const gdn_inputs *in, const kern_config *cfg, const char *who,
                   int chunked, gdn_error *e);

/* Round x[0 .. n) at rounding point `rp` (identity unless rp is in the mask). */
static inline void kern_num_round_f32(const kern_num *num, unsigned rp, float *x, int64_t n) {
  if (!(num->round_mask & rp)) return;
  for (int64_t i = 0; i < n; i++) x[i] = gdn_bf16_round(x[i]);
}

#endif
