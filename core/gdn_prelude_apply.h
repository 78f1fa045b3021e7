/* gdn_prelude_apply: the kernel inputs computed from a bfloat16 prelude
 * (gdn_prelude.h holds the prelude's seven tensors and says how each input
 * is computed and rounded), and the check that stored inputs equal them.
 * Above both gdn_inputs and gdn_prelude: inputs own a prelude
 * (gdn_inputs_attach_prelude), the prelude knows nothing of inputs, and
 * only this module computes one from the other. */
#ifndef GDN_PRELUDE_APPLY_H
#define GDN_PRELUDE_APPLY_H

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_prelude.h"

/* Writes the kernel inputs q, k, v, g, beta of `in` (allocated for
 * p->shape) from p as above; sets l2norm_in_kernel = 0 and marks all five
 * tensors bfloat16.  Leaves h0, seg, packing, scale and in->prelude alone. */
void gdn_prelude_apply(const gdn_prelude *p, gdn_inputs *in);

/* The steps of gdn_prelude_apply, for a caller that computes a range of
 * the inputs (gdn_synth_range): one row of d values of q or k through the
 * bfloat16 L2 norm (y may be x); g of one (b, t, h) element from a and its
 * head's A_log and dt_bias; beta from b.  Bit for bit the whole apply's. */
void gdn_prelude_norm_row(float *y, const float *x, int64_t d);
float gdn_prelude_g(float a, float a_log, float dt_bias);
float gdn_prelude_beta(float b);

/* Recomputes the kernel inputs from in->prelude and compares them with
 * in's bit for bit (float32 bits; the bfloat16 tensors are exact float32).
 * GDN_ERR_INPUT naming `where`, the first differing tensor and its first
 * index (b, t, head, d), both values, when they differ or when
 * l2norm_in_kernel is 1 (the prelude has normalised q and k already).
 * GDN_OK when in->prelude is NULL.  Memory: one copy of q, k, v, g, beta.
 * Runs on the calling thread only (no OpenMP): the fixture loader calls it
 * in a forked probe process (fixtures/fix_isolate.h). */
int gdn_prelude_verify(const gdn_inputs *in, const char *where, gdn_error *e);

#endif
