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
 * solve           the in-chunk triangular solve A = (I + S)^-1 of the chunked
 *                 kernels, GDN's and KDA's (kern_chunk_tmpl.h, kern_solve_xla.h):
 *                 SUBSTITUTION, forward substitution with fma (the default;
 *                 the order of the reference BLAS trsm JAX calls on CPU), or
 *                 XLA_EXPANDER, XLA's TriangularSolveExpander as TPU runs it
 *                 (row by row, each row one HIGHEST dot over the whole
 *                 block).
 * shard           how the affine-prefix kernel splits the sequence over the
 *                 devices (kern_affine_piece): TOKENS, upstream's shard_map
 *                 (T/D tokens per device, each piece chunked and padded on
 *                 its own), or CHUNKS (the padded sequence's chunks by
 *                 numpy's array_split rule; never what upstream runs, kept
 *                 as a mode).  kern_config_init's default is TOKENS.
 */
#ifndef KERN_CONFIG_H
#define KERN_CONFIG_H

#include <stdint.h>

#include "gdn_dtype.h"
#include "gdn_error.h"
#include "gdn_shape.h"
#include "kern_mutant.h"

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

typedef enum kern_shard {
  KERN_SHARD_TOKENS = 0,
  KERN_SHARD_CHUNKS = 1,
} kern_shard;

typedef enum kern_solve {
  KERN_SOLVE_SUBSTITUTION = 0,
  KERN_SOLVE_XLA_EXPANDER = 1,
} kern_solve;

typedef struct kern_config {
  gdn_dtype dtype;
  kern_matmul matmul;
  int ftz;
  int64_t chunk;
  int64_t devices;
  kern_prefix prefix;
  kern_shard shard;
  kern_solve solve;
  kern_mutant mutant; /* testing only: a catalogued bug in kern_affine_prefix (kern_mutant.h) */
} kern_config;

/* float32, IEEE matmuls, no FTZ, C = 64, 1 device, sequential prefix,
 * token sharding. */
void kern_config_init(kern_config *cfg);

const char *kern_matmul_name(kern_matmul m); /* "ieee", "default", "high", "highest" */
int kern_matmul_parse(const char *s, kern_matmul *out, gdn_error *e);
const char *kern_prefix_name(kern_prefix p); /* "sequential", "associative-scan", "hillis-steele" */
int kern_prefix_parse(const char *s, kern_prefix *out, gdn_error *e);
const char *kern_shard_name(kern_shard m); /* "tokens", "chunks" */
const char *kern_solve_name(kern_solve m); /* "substitution", "xla-expander" */
int kern_solve_parse(const char *s, kern_solve *out, gdn_error *e);
int kern_shard_parse(const char *s, kern_shard *out, gdn_error *e);

/* The dtype the kernel's o is rounded to: float64 for FLOAT64 compute,
 * otherwise the input dtype (bfloat16 when q was stored as bfloat16), as
 * MaxText casts o back to the input dtype. */
gdn_dtype kern_output_dtype(const kern_config *cfg, unsigned input_bf16_mask);

/* chunk >= 1; devices >= 1 and, for CHUNKS, no more than the number of
 * chunks of the padded sequence (the message says both numbers); for TOKENS,
 * a divisor of T (every device holds T/D >= 1 tokens; the message names the
 * nearest T that D divides). */
int kern_config_validate(const kern_config *cfg, const gdn_shape *s, gdn_error *e);

#endif
