/* kern_config: how a float kernel computes (the numerics under test).
 *
 * dtype           compute dtype.  FLOAT32 and FLOAT64: every step in that
 *                 format.  BFLOAT16: MaxText's compute_dtype = bfloat16
 *                 rounding points (algorithm.md), g and the carried state in
 *                 float32.
 * matmul          how each matrix product is computed: IEEE (plain products
 *                 and sums in the compute format, fused multiply-add, fixed
 *                 left-to-right order over the inner dimension), or as XLA
 *                 lowers jax.lax.Precision DEFAULT / HIGH / HIGHEST on TPU:
 *                 1, 3 or 6 bfloat16 passes accumulated in float32
 *                 (kern_mm.h).  Ignored (IEEE) for FLOAT64.
 * ftz             flush subnormal inputs and results to zero, as TPU does
 *                 (kern_num.h).  Ignored for FLOAT64.
 * chunk           C >= 1.
 * devices/prefix  for the affine-prefix kernel (kern_prefix.h: sequential,
 *                 jax.lax.associative_scan's tree, Hillis-Steele).
 */
#ifndef KERN_CONFIG_H
#define KERN_CONFIG_H

#include <stdint.h>

#include "gdn_dtype.h"
#include "gdn_error.h"
#include "gdn_shape.h"

typedef enum kern_matmul {
  KERN_MATMUL_IEEE = 0,
  KERN_MATMUL_DEFAULT = 1, /* 1 bf16 pass */
  KERN_MATMUL_HIGH = 2,    /* 3 passes (bf16_3x) */
  KERN_MATMUL_HIGHEST = 3, /* 6 passes (bf16_6x) */
} kern_matmul;

typedef enum kern_prefix {
  KERN_PREFIX_SEQUENTIAL = 0,
  KERN_PREFIX_ASSOCIATIVE_SCAN = 1,
  KERN_PREFIX_HILLIS_STEELE = 2,
} kern_prefix;

typedef struct kern_config {
  gdn_dtype dtype;
  kern_matmul matmul;
  int ftz;
  int64_t chunk;
  int64_t devices;
  kern_prefix prefix;
  int broken_compose; /* testing only: compose (A1,B1) o (A2,B2), the wrong order */
} kern_config;

/* float32, IEEE matmuls, no FTZ, C = 64, 1 device, sequential prefix. */
void kern_config_init(kern_config *cfg);

const char *kern_matmul_name(kern_matmul m); /* "ieee", "default", "high", "highest" */
int kern_matmul_parse(const char *s, kern_matmul *out, gdn_error *e);
const char *kern_prefix_name(kern_prefix p); /* "sequential", "associative-scan", "hillis-steele" */
int kern_prefix_parse(const char *s, kern_prefix *out, gdn_error *e);

/* The dtype the kernel's o is rounded to: float64 for FLOAT64 compute,
 * otherwise the input dtype (bfloat16 when q was stored as bfloat16), as
 * MaxText casts o back to the input dtype. */
gdn_dtype kern_output_dtype(const kern_config *cfg, unsigned input_bf16_mask);

/* chunk >= 1; devices >= 1 and no more than the number of chunks of the
 * padded sequence (the message says both numbers). */
int kern_config_validate(const kern_config *cfg, const gdn_shape *s, gdn_error *e);

#endif
