/* parity_recur_check_grad: the stored gradients of a non-GDN fixture
 * (fix_kda.h: /cotangents do, dht and /outputs/<name>/grads with dg per
 * channel) judged by `gdn-parity check` against the row's VJP oracle.
 *
 * When the fixture has /cotangents and at least one output has gradients,
 * the row's VJP oracle (oracle_kda_vjp.h for KDA) runs once on the
 * fixture's inputs, gate and cotangents, certified (MPFR at oracle_bits,
 * checked at oracle_bits + 64) -- unless the fixture's stored
 * /oracle/grads stands in for it (parity_recur_grad_stored_decide).  Each
 * output with gradients is one case, "output:<name>": each of dq, dk, dv, dg, dbeta, dh0 (dh0 absent without
 * /inputs/h0: null, not judged) measured normwise, err = max |x - r| /
 * max |r|, with where its largest |x - r| lies, and the case passes when
 * every err <= band.  The band is the one `gdn-parity --recurrence kda
 * --grad` judges our kernels' backward by (parity_recur_grad.h): the
 * forward's band for the case (parity_recur_case_band, PARITY_RECUR_BAND_F32
 * as the fixed one: for a per-channel gate u (8 kappa_G + 64), kappa_G of
 * the fixture's gates at its chunk_size and the output's devices),
 * parity_recur_band_bf16 of it when a gradient of the set is stored in
 * bfloat16.
 *
 * Attached to the check document as "grad":
 *   {"oracle": {"tier": "mpfr", "precision_bits", "check_bits",
 *    "certified_bits", "certified": {"dq": bits, ...}} (the stored
 *    gradients taken or not: parity_recur_grad_stored below), "cotangents":
 *    {"from_fixture": true, "dht": bool, "grad_problem_sha256"}, "cases":
 *    [{"subject": "output:<name>", "devices", "band", "kappa_g", "dq":
 *    {"err", "max_abs_err", "max_ref", "worst": {axis: index, ...}}, ...,
 *    "dh0" (or null), "failed": [names of the gradients over the band],
 *    "pass"}], "n_cases", "n_failed", "pass"}
 * and the document's n_cases, n_failed and pass count these cases too.
 * Nothing is attached (and nothing computed) when no output has gradients.
 */
#ifndef PARITY_RECUR_CHECK_GRAD_H
#define PARITY_RECUR_CHECK_GRAD_H

#include <jansson.h>

#include "gdn_grads.h"
#include "oracle_vjp.h"
#include "parity_recur_check.h"
#include "parity_recur_sweep.h"

/* A KDA fixture's stored gradient oracle (/oracle/grads, regen --grads) as
 * the reference instead of the VJP computed here, by GDN's rule
 * (parity_stored_grads.h): only beside a trusted stored forward, present,
 * fresh, certified to PARITY_STORED_GRADS_MIN_BITS, and agreeing with the
 * spot check -- key head 0's VJP recomputed by the KDA dd VJP, each tensor
 * within PARITY_STORED_GRADS_SPOT normwise.  taken 1: the stored values
 * are the reference, and "grad"'s "oracle" holds the stored certificate
 * (tier, precision_bits, check_bits, certified_bits, certified, with dd
 * normwise_bits; check_bits and certified null in a file without the
 * attribute certificate) with "from_fixture": true and "spot_check":
 * {"key_heads": 1, "rel"}: for an MPFR regen at the check's bits the
 * computed document's certificate, field for field; else
 * why (a note in the document: parity_stored_grads_note) and the VJP is
 * computed as without them, the rest of the document the same. */
typedef struct parity_recur_grad_stored {
  int taken;
  int spot_failed; /* why is the spot check's (logged as a warning) */
  double spot_rel;
  char why[256];   /* "" when nothing is stored */
} parity_recur_grad_stored;

/* Decides for orc's stored gradients (in, gate, ct: the run's or the
 * first group's, which holds key head 0; orc->grads of the same shape,
 * orc->grads_fresh set against the whole file's hash). */
int parity_recur_grad_stored_decide(const fix_oracle *orc, int forward_trusted, const gdn_inputs *in,
                                    const gdn_chgate *gate, const gdn_cotangents *ct, parity_recur_grad_stored *sg,
                                    gdn_error *e);

/* Before the forward's cases: *judged 1 when fx's gradients are judged
 * (/cotangents, and an output with gradients), and then the decision for
 * its stored /oracle/grads (parity_recur_grad_stored_decide; forward_trusted:
 * the check took the stored /oracle as the forward's reference,
 * parity_recur_oracle_trust).  A stored set not taken -- or not judged at
 * all -- is freed from fx here (fx->oracle.grads cleared, its attributes
 * kept), so it is never held beside the run's own sets: the whole check's
 * peak is then what the plan of parity_recur_check_stream.h counts. */
int parity_recur_check_grads_decide(const parity_recur_check_opts *o, fix_fixture *fx, int forward_trusted,
                                    parity_recur_grad_stored *sg, int *judged, gdn_error *e);
/* After them: the VJP oracle (unless sg->taken), each output's gradients
 * judged, "grad" added to doc and *pass updated. */
int parity_recur_check_grads(const parity_recur_check_opts *o, const fix_fixture *fx,
                             const parity_recur_grad_stored *sg, json_t *doc, int *pass, gdn_error *e);

/* The pieces, for a check that measures by head group
 * (parity_recur_check_stream.h) and must write the same document.
 *
 * begin: the "grad" object without cases judged yet (NULL: out of
 * memory), the oracle's line logged: the computed VJP's certificate cert,
 * or with sg->taken the stored one's from orc.  judge: output x's case from its
 * measurements m (whole, or folded over groups: indices of the whole shape
 * s; only x->grads_present's are read) and the float32 band of the case
 * (before the bfloat16 widening, which judge applies by x->grads.dtype);
 * kj (the case's "kappa_g", or NULL) is taken.  end: g attached to doc
 * with the counts of both updated (doc takes g, also on error). */
json_t *parity_recur_check_grad_begin(const parity_recur_check_opts *o, int dht, const char *grad_problem_sha256,
                                      const oracle_vjp_certificate *cert, const fix_oracle *orc,
                                      const parity_recur_grad_stored *sg);
int parity_recur_check_grad_judge(const parity_recur_check_opts *o, const gdn_shape *s, const fix_output *x,
                                  const parity_recur_err m[GDN_GRADS_N], double band, json_t *kj, json_t *cases,
                                  int *failed, gdn_error *e);
int parity_recur_check_grad_end(json_t *doc, json_t *g, int gfailed, int *pass, gdn_error *e);

#endif
