/* parity_recur_check: `gdn-parity check` of a fixture whose recurrence is
 * not Gated DeltaNet's (fix_kda.h: root attribute recurrence, a per-channel
 * gate g (B, T, Hv, Dk)); its stored gradients, when it has /cotangents,
 * are judged by parity_recur_check_grad.h (the document's "grad").
 *
 * The row of parity_recurrence.h named by the file supplies everything:
 * its oracle, certified (MPFR at oracle_bits, checked at oracle_bits + 64),
 * is the reference -- or the file's /oracle when trusted
 * (parity_recur_oracle_trust; stale or untrusted: recomputed, the document's
 * "oracle_note" and a warning line say why) --; judged against it are the row's token kernel, its
 * chunked kernel at each chunk (default: the fixture's chunk_size) and its
 * affine-prefix at each (chunk, devices) -- our float32 kernels on the
 * fixture's inputs -- and every /outputs/<name> of the file (o, and ht when
 * stored: what a TPU dump holds).  Each case measures, for o and ht, the
 * normwise relative error err = max |x - r| / max |r| and where the largest
 * |x - r| lies (b, t or token, head, d), and passes when err <= band for
 * both, the band the sweep judges by (parity_recur_case_band): for a
 * per-channel gate (KDA) band = u (8 kappa_G + 64), u = 2^-24, kappa_G per
 * channel of the fixture's gates at the case's chunk and devices (the token
 * kernel: kappa_G 0, "kappa_g" null); for a stored output at the file's
 * chunk_size (an output declares no chunk size of its own) and the output's
 * devices attribute (absent: one device).  A gate of another shape: the
 * fixed PARITY_RECUR_BAND_F32.  An o stored as bfloat16 is judged by
 * parity_recur_band_bf16(band): rounding o to bfloat16 (8 significand bits,
 * u_bf16 = 2^-8) moves each element by at most u_bf16 of itself, so
 * max |bf(x) - r| <= u_bf16 max |r| + (1 + u_bf16) max |x - r|; its ht
 * (float32 by schema) keeps the float32 band, "band_ht" in the case.
 *
 * The document:
 *   {"schema": "gdn-parity-recurrence-check", "version": 1,
 *    "recurrence", "gate_shape", "fixture", "inputs_sha256", "shape",
 *    "chunk_size", "oracle": {"tier", "precision_bits", "check_bits" (null
 *    from the fixture), "certified_bits", "from_fixture", "spot_check":
 *    {"columns", "rel"} (from the fixture only), "note" (a stored /oracle
 *    not used: why)}, "cases": [{"subject" (a kernel's name, or
 *    "output:<name>"), "chunk", "devices", "band", "band_ht" (a bfloat16
 *    output only), "kappa_g" (per-channel gates: as the sweep's), "o": {"err",
 *    "max_abs_err", "max_ref", "worst": {"b", "t", "h", "d"}}, "ht": {...,
 *    "worst": {"b", "h", "dk", "dv"}} or null, "pass"}], "n_cases",
 *    "n_failed", "pass"}.
 */
#ifndef PARITY_RECUR_CHECK_H
#define PARITY_RECUR_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "fix_fixture.h"
#include "gdn_error.h"
#include "parity_progress.h"
#include "parity_recur_sweep.h"
#include "parity_recurrence.h"

/* The band of an o stored as bfloat16, over the float32 band (above). */
static inline double parity_recur_band_bf16(double band) { return 0x1p-8 + (1 + 0x1p-8) * band; }

typedef struct parity_recur_check_opts {
  const parity_recurrence *rec;
  const char *name; /* the fixture, for the document and the log */
  int64_t chunks[PARITY_RECUR_MAX_CHUNKS]; /* n_chunks 0: the fixture's chunk_size */
  int n_chunks;
  int64_t devices[PARITY_RECUR_MAX_CHUNKS]; /* n_devices 0: those of 1, 2, 4, 8 dividing T */
  int n_devices;
  int oracle_bits;
  FILE *log; /* a line per case (NULL: silent) */
  parity_progress *progress; /* the terminal's line (NULL: none): a step per oracle run, advancing inside it */
} parity_recur_check_opts;

/* Whether fx's stored /oracle stands as the reference, as for Gated
 * DeltaNet: present, fresh (inputs_sha256 and problem_sha256 match the
 * inputs), within fix_oracle_check's limits for float32 outputs, and
 * agreeing to 2^-40 (normwise) with 4 evenly spread value columns
 * recomputed by the row's oracle (columns of the state are independent: the
 * recurrence run on v and h0 restricted to them).  Not trusted: why says
 * why (empty when there is no /oracle). */
typedef struct parity_recur_trust {
  int trusted;
  int64_t spot_columns;
  double spot_rel;
  char why[256];
} parity_recur_trust;
int parity_recur_oracle_trust(const parity_recur_check_opts *o, const fix_fixture *fx, parity_recur_trust *t,
                              gdn_error *e);

/* parity_recur_oracle_trust in three steps, for a check that reads the
 * file by key-head group (parity_recur_check_stream.h): the gate (1 when
 * fx's /oracle is present, fresh and within fix_oracle_check's limits, so
 * its spot check decides; else 0 with why set, empty without /oracle); the
 * spot check's maxima over fx's value heads folded into acc (|o - r|, |r|
 * of o, then of ht; start at 0: exact over groups in any order); the
 * verdict from the folded acc. */
int parity_recur_trust_gate(const fix_fixture *fx, char *why, size_t n);
int parity_recur_spot_fold(const parity_recur_check_opts *o, const fix_fixture *fx, double acc[4], int64_t *ncols,
                           gdn_error *e);
void parity_recur_trust_finish(parity_recur_trust *t, const double acc[4], int64_t ncols);

/* One case of the document (s: the whole shape; eo, eh measured over it,
 * has_ht 0: ht not stored), appended to cases and logged; kj taken. */
int parity_recur_check_judge(const parity_recur_check_opts *o, const char *subject, int64_t C, int64_t D,
                             const gdn_shape *s, parity_recur_err eo, parity_recur_err eh, int has_ht, double band,
                             double band_ht, json_t *kj, json_t *cases, int *failed, gdn_error *e);

/* The document up to its "cases" (empty). */
json_t *parity_recur_check_doc_head(const parity_recur_check_opts *o, const gdn_shape *s, const char *inputs_sha256,
                                    int64_t chunk_size, const fix_oracle *fo, const oracle_certificate *c,
                                    const parity_recur_trust *t);

/* Judges fx (loaded by fix_kda_load); *doc (the caller's reference) and
 * *pass as parity_recur_sweep's.  A stored /oracle/grads that is not taken
 * (parity_recur_check_grads_decide, before anything runs) is freed from
 * fx, so it is never held beside the run's own sets. */
int parity_recur_check(const parity_recur_check_opts *o, fix_fixture *fx, json_t **doc, int *pass,
                       gdn_error *e);

#endif
