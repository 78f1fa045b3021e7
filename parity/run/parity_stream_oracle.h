/* parity_stream_oracle: a fixture's stored /oracle in a run streamed by
 * head group (parity_sweep_stream.h), trusted or refused exactly as the
 * whole check trusts it (gdn-parity check: fresh for the inputs and the
 * attributes, fix_oracle_check's table, then a spot check of 4 state
 * columns recomputed by the double-double oracle, agreeing to 2^-40).
 *
 * What the file's metadata settles is settled before the run
 * (parity_stored_oracle_open: stale, freshness unknown, precision_bits or
 * certified_bits out of range); the rest is found a group at a time as
 * each group's owner reads its slab of /oracle o and ht by hyperslab
 * (parity_stored_oracle_group): the first element that is not finite, by
 * its index in the whole dataset (a group's slab keeps the whole order, so
 * the least index over the groups is the whole scan's first), and the
 * spot check's sums of squares (exact, parity_reference_spot_part).  Then
 * parity_stored_oracle_finish gives the same verdict and the same words as
 * the whole check: trusted, the reference's fields as fixture_reference
 * sets them; or not, `note` saying why, and the run computes its oracle.
 */
#ifndef PARITY_STREAM_ORACLE_H
#define PARITY_STREAM_ORACLE_H

#include <stdint.h>

#include "fix_fixture.h"
#include "gdn_dtype.h"
#include "parity_metrics.h"
#include "parity_oracle.h"

typedef struct parity_stored_oracle {
  int present;   /* the file has a /oracle */
  int candidate; /* fresh, bits in range, a tier to judge with: read by group and checked */
  int64_t precision_bits, certified_bits;
  fix_oracle attrs;    /* the stored attributes (tier and dd certificate); no data */
  gdn_dtype judged;
  int weak;            /* fix_oracle_check's FIX_ORACLE_WEAK, reported when every value is finite */
  char weak_why[256];
  int64_t bad_at;      /* the first non-finite element's whole index (-1: none) */
  int bad_ht;          /* in ht (else o); an o element always comes first */
  double bad_v;
  parity_rel_acc *acc; /* o and ht's spot sums */
  int64_t spot_cols;
  char note[320];      /* why a stored /oracle was not used ("": used, or none) */
  char warning[400];   /* the line the whole check prints before computing a fresh one ("": none) */
} parity_stored_oracle;

void parity_stored_oracle_init(parity_stored_oracle *so);
void parity_stored_oracle_clear(parity_stored_oracle *so);
/* From the file's metadata (fix_group_meta), the run's tier and the dtype
 * judged. */
int parity_stored_oracle_open(parity_stored_oracle *so, const fix_fixture *meta, parity_oracle_tier tier,
                              gdn_dtype judged, gdn_error *e);
/* Group g (value heads from v0 of the whole run's Hv): its inputs and its
 * slab of the stored /oracle. */
int parity_stored_oracle_group(parity_stored_oracle *so, const gdn_inputs *in, const gdn_outputs *slab, int64_t v0,
                               int64_t whole_hv, gdn_error *e);
/* Under mpirun, each rank having checked the groups it holds: every
 * rank's findings merged into every rank's (the least first non-finite
 * index, the spot sums, exact; collective, status as parity_dist_merge.h),
 * so that finish gives the one-process verdict.  One process: nothing. */
int parity_stored_oracle_merge(parity_stored_oracle *so, int status, gdn_error *e);
/* After every group: *trusted, and when trusted the reference's fields
 * (its outputs are the groups' in scratch); else note and warning set. */
/* A trusted stored /oracle's certificate into ref, as the whole and the
 * streamed check report it: its tier (mpfr, or dd with the certificate
 * regen stored: check_bits, normwise_bits, guaranteed_bits,
 * sampled_columns), from_fixture 1.  whole: the run's shape. */
void parity_stored_oracle_take(const fix_oracle *fo, const gdn_shape *whole, parity_reference *ref);
void parity_stored_oracle_finish(parity_stored_oracle *so, const gdn_shape *whole, parity_reference *ref,
                                 int *trusted);

#endif
