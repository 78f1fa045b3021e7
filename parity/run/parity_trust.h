/* parity_trust: does the policy pass correct code? (`gdn-parity trust`)
 *
 * Runs correct implementations as subjects over many seeds and gate regimes
 * and records, per rule, how often it FAILs them (every such FAIL is a
 * false FAIL: nothing run here is wrong) and how close they come to the
 * limit.  The subjects: the reformulations of kern_reform.h (each an extra
 * subject row of kind "external", judged on its own as a fixture's output
 * of another implementation is, by the rules for external outputs), the
 * stock scan itself (the baseline, by its bands) and the affine-prefix
 * kernel at each device count.  They are judged by whatever policy the run
 * is given (the built-in one by default), so after the policy changes the
 * same command shows the new margins.
 *
 * A run is one input set: a shape, with or without h0, a gate regime, a
 * seed.  Gate regimes: slow (GDN_SYNTH_SLOW_GATES), init (the model's
 * initial gates), spike-10 / spike-40 / spike-80 (slow gates with g = -10,
 * -40, -80 on 5 % of the tokens, every value head of a chosen token, the
 * tokens drawn from the seed: gdn_rng stream PARITY_TRUST_SPIKE_STREAM,
 * token b T + t chosen when its uniform is below 0.05).  Each run: the
 * inputs, the reference (the oracle tier; dd by default), optionally the
 * cotangents and the reference's VJP (--grad), then one parity_sweep at the
 * chunk size over the device counts (float32, IEEE matmuls, sequential
 * prefix), quiet.  Every check of the run's cases is counted once: a
 * chunk-stage subject's (the scan) from the first case, the case-stage
 * subjects' (affine-prefix, the reformulations: one per device count, D > 1
 * through their context-parallel form, kern_reform.h) from every case.
 *
 * Statistics per (rule, tensor): the checks counted, the FAILs, and the
 * distribution of value / limit (report_summary_margin): min, median, p90,
 * max, quantile q being the sorted values' element ceil(q n) - 1 (nearest
 * rank); the worst check's run.  Per subject: runs, failed runs (a run
 * where one of its checks fails), worst value / limit, and the same per
 * gate regime.  Every FAIL is listed.  The document (docs/trust-json.md,
 * "schema": "gdn-parity-trust", "version": 1) is deterministic: with
 * `reproducible` it has no timestamp or timings and the same options give
 * the same bytes, whatever the thread count.
 */
#ifndef PARITY_TRUST_H
#define PARITY_TRUST_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "gdn_error.h"
#include "gdn_shape.h"
#include "gdn_synth.h"
#include "kern_reform.h"
#include "parity_oracle.h"
#include "parity_policy.h"
#include "parity_subject.h"

#define PARITY_TRUST_SPIKE_STREAM GDN_SYNTH_SPIKE_STREAM /* gdn_synth.h */
#define PARITY_TRUST_MAX_SHAPES 8

typedef enum parity_trust_regime {
  PARITY_TRUST_SLOW = 0,
  PARITY_TRUST_INIT,
  PARITY_TRUST_SPIKE_10,
  PARITY_TRUST_SPIKE_40,
  PARITY_TRUST_SPIKE_80,
  PARITY_TRUST_REGIMES
} parity_trust_regime;

extern const char *const parity_trust_regime_names[]; /* NULL-terminated: slow, init, spike-10, ... */

typedef struct parity_trust_opts {
  gdn_shape shapes[PARITY_TRUST_MAX_SHAPES];
  size_t n_shapes;
  int64_t chunk;
  int64_t devices[8];
  size_t n_devices;
  int regimes[PARITY_TRUST_REGIMES]; /* parity_trust_regime, given order */
  size_t n_regimes;
  kern_reform reforms[KERN_REFORM_COUNT]; /* catalogue order */
  size_t n_reforms;
  int h0[2]; /* 0 without, 1 with, in this order */
  size_t n_h0;
  int64_t seeds;      /* seeds first_seed .. first_seed + seeds - 1 */
  int64_t first_seed; /* 0 unless a campaign is split over runs */
  int grad;      /* also the backward (the rows that have one, scan, affine-prefix) */
  int campaign;  /* recorded: the full campaign's budget was asked for */
  parity_oracle_tier tier;
  int oracle_bits;
  const parity_policy *policy;
  int reproducible;
  const char *command; /* recorded, or NULL */
  FILE *progress;      /* one line per run, or NULL */
} parity_trust_opts;

/* The subject row of reformulation r (kind external, stage case, judged:
 * see above); built on first use, thread-safe. */
const parity_subject_methods *parity_trust_subject(kern_reform r);

/* "all" (every row but plain, the stock order itself) or NAME,NAME,...;
 * unknown and repeated names refused (GDN_ERR_INPUT, the message lists the
 * names). */
int parity_trust_parse_reforms(const char *s, kern_reform *out, size_t *n, gdn_error *e);

/* The spikes of a spike regime written into in->g (slow gates drawn). */
void parity_trust_spike(gdn_inputs *in, parity_trust_regime r, uint64_t seed);

/* Runs the budget into a new document *doc (json_decref it); errors leave
 * *doc NULL. */
int parity_trust_run(const parity_trust_opts *o, json_t **doc, gdn_error *e);

/* The text table of a document: per rule, per subject, the verdict line. */
void parity_trust_log(FILE *f, const json_t *doc);

/* `gdn-parity trust ...` (argv[1] is "trust"): its own options
 * (parity_trust_cli.c).  Returns the exit status (0; 1 with --expect-pass
 * and a false FAIL), or -1 with e set. */
int parity_trust_main(int argc, char **argv, FILE *out, FILE *err, gdn_error *e);

#endif
