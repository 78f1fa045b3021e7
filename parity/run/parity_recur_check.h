/* parity_recur_check: `gdn-parity check` of a fixture whose recurrence is
 * not Gated DeltaNet's (fix_kda.h: root attribute recurrence, a per-channel
 * gate g (B, T, Hv, Dk)), forward only.
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
 * both: PARITY_RECUR_BAND_F32 (2^-12; parity_recur_sweep.h gives its
 * reason) for float32 outputs; for an o stored as bfloat16,
 * PARITY_RECUR_BAND_BF16 = 2^-6: storing o in bfloat16 alone moves an
 * element by up to 2^-9 of itself, eight times below that band, while the
 * mutants' errors (0.4 to 0.9) stay far above it.
 *
 * The document:
 *   {"schema": "gdn-parity-recurrence-check", "version": 1,
 *    "recurrence", "gate_shape", "fixture", "inputs_sha256", "shape",
 *    "chunk_size", "oracle": {"tier", "precision_bits", "check_bits" (null
 *    from the fixture), "certified_bits", "from_fixture", "spot_check":
 *    {"columns", "rel"} (from the fixture only), "note" (a stored /oracle
 *    not used: why)}, "cases": [{"subject" (a kernel's name, or
 *    "output:<name>"), "chunk", "devices", "band", "o": {"err",
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
#include "parity_recur_sweep.h"
#include "parity_recurrence.h"

#define PARITY_RECUR_BAND_BF16 0x1p-6

typedef struct parity_recur_check_opts {
  const parity_recurrence *rec;
  const char *name; /* the fixture, for the document and the log */
  int64_t chunks[PARITY_RECUR_MAX_CHUNKS]; /* n_chunks 0: the fixture's chunk_size */
  int n_chunks;
  int64_t devices[PARITY_RECUR_MAX_CHUNKS]; /* n_devices 0: those of 1, 2, 4, 8 dividing T */
  int n_devices;
  int oracle_bits;
  FILE *log; /* a line per case (NULL: silent) */
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

/* Judges fx (loaded by fix_kda_load); *doc (the caller's reference) and
 * *pass as parity_recur_sweep's. */
int parity_recur_check(const parity_recur_check_opts *o, const fix_fixture *fx, json_t **doc, int *pass,
                       gdn_error *e);

#endif
