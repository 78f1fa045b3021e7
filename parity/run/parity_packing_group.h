/* parity_packing_group: the packing verdict (parity_packing.h) of external
 * outputs judged a head group at a time, merged across the groups.
 *
 * err[p] = max |o - ref_p| / max |ref_p| over the documents' tokens is two
 * maxima and one division: each group adds its heads' maxima (exact), and
 * the division is made once after the last group, so the merged err[p] is
 * the whole run's bit for bit, and so is the verdict recorded from it
 * (parity_packing_record).  A NaN in any group's o makes err NaN, as
 * whole.  Per group the other packing's reference is computed on the
 * group's inputs (its heads, the run's segment ids: parity_stream_seg.h) at
 * the fixture's tier and precision, as parity_packing_match computes it
 * whole; value heads are independent, so it is the whole reference's slab.
 *
 * The padding convention (parity_padding.h) needs no merging: what it
 * records depends on the segment ids alone (the same in every group), and
 * masking o at padding tokens is per element, so parity_padding_apply on a
 * group's outputs and reference gives the whole mask's slab (tested with
 * this file's, test_packing_group).
 */
#ifndef PARITY_PACKING_GROUP_H
#define PARITY_PACKING_GROUP_H

#include <stddef.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "parity_oracle.h"
#include "parity_subject.h"

/* One output's maxima so far, per packing (GDN_PACKING_LEAK, _RESET). */
typedef struct parity_packing_acc {
  double num[2], den[2];
  int nan[2];
} parity_packing_acc;

void parity_packing_acc_init(parity_packing_acc *a);

/* Group g's o (binary64, the group's shape in->shape) against ref_p, the
 * reference under packing p: the maxima over the documents' tokens. */
void parity_packing_acc_add(parity_packing_acc *a, int p, const gdn_inputs *in, const double *o, const double *ref);

/* err[p] from the maxima (parity_packing_err's division). */
void parity_packing_acc_err(const parity_packing_acc *a, double err[2]);

/* The reference under the packing in->packing is not (tier, bits) into
 * alt (the caller's, initialized; clear it). */
int parity_packing_group_other(const gdn_inputs *in, parity_oracle_tier tier, int bits, parity_reference *alt,
                               gdn_error *e);

/* One group of n outputs: o[i] (the group's slab of output i's o) against
 * ref (the group's reference under in->packing) and against the other
 * packing's reference, computed here (tier, bits), into acc[i].  Nothing
 * without a boundary, outputs or ref->out.o. */
int parity_packing_group_add(const gdn_inputs *in, const parity_reference *ref, parity_oracle_tier tier, int bits,
                             const double *const *o, size_t n, parity_packing_acc *acc, gdn_error *e);

/* After the last group: each output's verdict from its merged maxima under
 * the run's inputs `in` (its segment ids and packing; the verdict is not
 * recorded without a boundary, as whole). */
int parity_packing_group_record(const gdn_inputs *in, const parity_packing_acc *acc, parity_external *ext, size_t n,
                                gdn_error *e);

#endif
