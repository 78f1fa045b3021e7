/* oracle: the Gated DeltaNet recurrence in MPFR, the ground truth.
 *
 * Inputs are read exactly (every float32 is an MPFR number at any precision
 * >= 24).  Every operation is an MPFR operation at the working precision p,
 * rounded to nearest; the only roundings are those of p-bit arithmetic, and
 * the final rounding of o and ht to binary64 (nearest).  Constants:
 *   scale = Dk^-1/2 computed in MPFR (or the binary64 in gdn_inputs.scale);
 *   the L2-norm epsilon is the binary64 nearest 1e-6 (the Python literal).
 *
 * Two forms, equal in exact arithmetic:
 *   ORACLE_FORM_TOKEN    the token-level recurrence (algorithm.md), streamed:
 *                        memory is O(Dk x Dv) per work item whatever T.
 *   ORACLE_FORM_CHUNKED  MaxText's chunked form with chunk size C and zero
 *                        padding of T, every step in MPFR.
 * Work is split into independent items (batch, value head, block of Dv
 * columns); results are bit-identical for any thread count.
 */
#ifndef ORACLE_H
#define ORACLE_H

#include <mpfr.h>
#include <stdint.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"

typedef enum oracle_form {
  ORACLE_FORM_TOKEN = 0,
  ORACLE_FORM_CHUNKED = 1,
} oracle_form;

typedef struct oracle_config {
  mpfr_prec_t prec;       /* working precision p, bits (>= 53; default 128) */
  oracle_form form;
  int64_t chunk;          /* for ORACLE_FORM_CHUNKED: C >= 1 */
  mpfr_prec_t check_prec; /* for oracle_run_certified: the higher precision;
                             0 means p + 64 */
} oracle_config;

void oracle_config_init(oracle_config *cfg); /* p = 128, token form, C = 64 */

/* o and ht of the recurrence at precision p, rounded to binary64.
 * `out` is initialised by the caller and allocated here (dtype float64). */
int oracle_run(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out, gdn_error *e);

/* The oracle's check of itself.
 *
 * The same form is run at p and at check_prec > p in lockstep; for every
 * element x of o and ht, with r the check_prec value:
 *   bits(x) = min(p, floor(log2(max(|r|, tau) / |x - r|)))   (p when x == r)
 * where tau = 2^-64 * max |r| over the same tensor (o or ht): relative
 * agreement is meaningless at a zero, so elements below tau are judged
 * against that floor instead.  certified_bits is the minimum over both
 * tensors.  The outputs returned are the precision-p values. */
typedef struct oracle_certificate {
  int precision_bits;  /* p */
  int check_bits;      /* the higher precision */
  int certified_bits;  /* min over o and ht */
  int certified_o, certified_ht;
  double floor_o, floor_ht; /* tau of each tensor, as binary64 */
} oracle_certificate;

int oracle_run_certified(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out,
                         oracle_certificate *cert, gdn_error *e);

/* Number of bits two binary64 results agree to, by the rule above, with
 * p = 53 (for comparing forms or tiers that were rounded to binary64). */
int oracle_bits_agreed(const gdn_outputs *x, const gdn_outputs *r, int cap_bits);

#endif
