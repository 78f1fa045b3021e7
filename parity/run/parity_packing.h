/* parity_packing: which packing semantics an external output computed.
 *
 * A fixture with packed documents (segment ids with at least one boundary)
 * has an oracle under its declared packing (leak or reset).  An external
 * implementation may have done the other thing -- MaxText's kernel leaks
 * state from one document into the next; flash-linear-attention restarts at
 * cu_seqlens -- and a user needs to learn which.  parity_packing_match
 * computes the reference under the other semantics too (same tier and
 * precision as the fixture's) and measures each output's o against both:
 *
 *   err[p] = max_i |o_i - ref_p_i| / max_i |ref_p_i|     (binary64, o as stored)
 *
 * over the documents' tokens (padding, segment id 0, is left out: what an
 * output computes there is a convention, parity_padding.h).
 *
 * The output matches p when err[p] * PARITY_PACKING_DECISIVE <= err[other];
 * otherwise the two are indistinguishable on these inputs (a boundary whose
 * incoming state has decayed to nothing cannot tell them apart).  Why 4: an
 * implementation's own error against its semantics' oracle is rounding
 * (float32: ~1e-6, bfloat16: ~1e-2 normwise), while the other semantics'
 * oracle differs by the state carried over a boundary, which on the
 * synthetic Qwen-like gates is O(0.1 - 1) of max |o| after it; a factor of 4
 * separates those by orders of magnitude, yet refuses to decide when both
 * errors are of one size.
 *
 * What is recorded, per output, in its attrs (parity_external.attrs):
 * "packing_matched" ("leak", "reset" or "indistinguishable") and
 * "packing_err" {"leak": err, "reset": err}.  An output that matches the
 * semantics the fixture does NOT declare is marked (packing_mismatch, with a
 * note naming what it matches) and fails its verdict whatever the policy
 * says: it computed another function.  An output that declares a packing
 * (its schema v2 attribute) other than the one it matches gets
 * "packing_declared" ("declares packing leak but computes reset"), a note.
 */
#ifndef PARITY_PACKING_H
#define PARITY_PACKING_H

#include <stddef.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "parity_oracle.h"
#include "parity_subject.h"

#define PARITY_PACKING_DECISIVE 4.0

/* Boundaries of in->seg (t > 0, nonzero id differing from t-1's), all rows;
 * 0 without segment ids. */
int64_t parity_packing_boundaries(const gdn_inputs *in);

/* err[p] as above for n values of o against ref. */
double parity_packing_err(const double *o, const double *ref, size_t n);

/* The matched semantics (GDN_PACKING_*) or -1 when indistinguishable. */
int parity_packing_decide(const double err[2]);

/* Output x's verdict from err[p] (as above, p = GDN_PACKING_*) under the
 * fixture's `declared` packing: its attrs, packing_matched, its mismatch
 * and note (what parity_packing_match records; parity_packing_group.h after
 * the last head group). */
int parity_packing_record(parity_external *x, const double err[2], int declared, gdn_error *e);

/* For each of the n externals: err against `ref` (under in->packing) and
 * against a reference computed here under the other packing (tier, bits);
 * records the result in ext[i].attrs and ext[i].packing_*.  Does nothing
 * when the inputs have no boundary or there is no reference. */
int parity_packing_match(const gdn_inputs *in, const parity_reference *ref, parity_oracle_tier tier, int bits,
                         parity_external *ext, size_t n, gdn_error *e);

#endif
