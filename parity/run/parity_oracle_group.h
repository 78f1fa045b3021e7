/* parity_oracle_group: the reference of a run streamed by head group
 * (parity_stream.h), one group at a time, with the whole run's certificate.
 *
 * Every work item of the oracle (both tiers, forward and VJP) lies inside
 * one head (oracle_part.h), so group g's outputs are the whole run's slab
 * for its heads bit for bit; the dd tiers' sample columns are placed by the
 * whole run's head index (oracle_dd_config.head0, whole_hv), and each
 * group's certificate comes as a tally of exact accumulators; merged over
 * the groups they give the whole run's certificate bit for bit.  The tier
 * is resolved once, on the whole shape (AUTO weighs the whole run's cost).
 *
 *   parity_group_oracle_init    the whole shape, the requested tier, bits,
 *                               and whether gradients are wanted;
 *   parity_group_oracle_run     group inputs (key heads from k0), its
 *                               cotangents (or NULL), into r (outputs and
 *                               gradients for the group's shape);
 *   parity_group_oracle_finish  after every group once: the whole run's
 *                               certificate fields into r, as
 *                               parity_reference_compute(_grads) sets them
 *                               (no outputs: they were the groups').
 */
#ifndef PARITY_ORACLE_GROUP_H
#define PARITY_ORACLE_GROUP_H

#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "oracle_part.h"
#include "parity_oracle.h"

typedef struct parity_group_oracle {
  gdn_shape whole;
  parity_oracle_tier requested, tier, grad_tier; /* tier, grad_tier: resolved on the whole shape */
  int bits, grads;
  int vjp_only;          /* the forward is a fixture's stored /oracle: only the VJP is computed, and
                            finish sets only r's gradient fields (r kept otherwise) */
  int grads_stored;      /* set only with vjp_only (the stored gradients come only with the stored
                            forward): nothing is computed, and finish leaves r's gradient fields to
                            the caller */
  oracle_tally fwd, vjp; /* merged over the groups run so far (tier 0: none yet) */
  double seconds, grad_seconds;
} parity_group_oracle;

void parity_group_oracle_init(parity_group_oracle *go, const gdn_shape *whole, parity_oracle_tier requested,
                              int bits, int grads);
void parity_group_oracle_clear(parity_group_oracle *go);
int parity_group_oracle_run(parity_group_oracle *go, const gdn_inputs *in, int64_t k0, const gdn_cotangents *ct,
                            parity_reference *r, gdn_error *e);
/* parity_group_oracle_run in two steps, for a group computed on another
 * rank than the one that merges (parity_sweep_stream.c): compute gives the
 * group's reference and its tallies (and seconds); fold merges them
 * (exactly, in any order of groups) and empties them. */
typedef struct parity_group_tally {
  oracle_tally fwd, vjp; /* tier 0: none */
  double seconds[2];     /* forward, VJP */
} parity_group_tally;
void parity_group_tally_init(parity_group_tally *gt);
void parity_group_tally_clear(parity_group_tally *gt);
int parity_group_oracle_compute(const parity_group_oracle *go, const gdn_inputs *in, int64_t k0,
                                const gdn_cotangents *ct, parity_reference *r, parity_group_tally *gt,
                                gdn_error *e);
int parity_group_oracle_fold(parity_group_oracle *go, parity_group_tally *gt, gdn_error *e);
int parity_group_oracle_finish(parity_group_oracle *go, parity_reference *r, gdn_error *e);

#endif
