/* parity_recur_sweep: a forward sweep of one recurrence row
 * (parity_recurrence.h) on synthetic inputs, judged against its oracle.
 *
 * The inputs are gdn_synth's (q, k, v, beta, h0 as for GDN), the gate the
 * row's draw.  The oracle runs once, certified: the MPFR token form at
 * oracle_bits, checked at oracle_bits + 64; or (dd) the double-word tier,
 * two columns of each head checked by MPFR at oracle_bits.  Then the cases: the row's
 * token kernel, and its chunked kernel at each chunk size, in the numerics
 * of dtype, matmul and ftz (float32 with IEEE products by default; each
 * case's band then follows the mode, parity_recur_mode_band.h).  Each case measures,
 * for o and ht, the normwise relative error
 *   err = max |x - r| / max |r|          (r the oracle, x the kernel)
 * and passes when err <= band for both.  For a per-channel gate (KDA) the
 * band is the case's, u (C_K kappa_G + F) (below; each case's JSON has its
 * "band" and "kappa_g": the worst channel's index and value).  For GDN's
 * row the band (PARITY_RECUR_BAND_F32, 2^-12 ~ 2.4e-4; the document's
 * top-level "band") is float32's fixed one: measured errors of the KDA
 * kernels under Kimi Linear's gates are 2e-7 to 7e-7 normwise
 * (docs/numerics.md, "Kimi Delta Attention"), some 300x below it, while the
 * gate applied along the wrong axis of the state gives 0.4 to 0.9.  A case whose kernel refuses the configuration is an
 * error, not a failure.
 *
 * The document (JSON) names the recurrence and its gate shape:
 *   {"schema": "gdn-parity-recurrence", "version": 1, "recurrence": "kda",
 *    "gate_shape": "head-token-channel", "shape": {...}, "seed", "h0",
 *    "mutant", "oracle": {"tier": "mpfr" | "dd", "precision_bits", "check_bits",
 *    "certified_bits", and for dd "normwise_bits", "sampled_columns"}, "band", "cases": [{"subject", "chunk" (null for the
 *    token kernel), "devices" (null but for the affine-prefix), "o": {"err", "max_abs_err", "max_ref"}, "ht": {...},
 *    "pass", and for a per-channel gate "band" and "kappa_g": {"worst_channel", "value", "o", "ht",
 *    "median_channel"} (null for the token kernel)}], "n_cases", "n_failed", "pass"}.
 */
#ifndef PARITY_RECUR_SWEEP_H
#define PARITY_RECUR_SWEEP_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "gdn_error.h"
#include "gdn_shape.h"
#include "kern_config.h"
#include "parity_kappa_ch.h"
#include "parity_recurrence.h"

#define PARITY_RECUR_BAND_F32 0x1p-12
/* The float32 band of a per-channel gate's cases (KDA), following the
 * condition measure (parity_kappa_ch.h):
 *   band = u (C_K kappa_G + F),  u = 2^-24,
 * kappa_G the worst channel's for the case's chunk grid (0 for the token
 * kernel, which forms no cumulative sum).  F = 64 covers what every kernel
 * loses whatever the gate (the token loop: 4u to 13u measured, Dk 32 to 128,
 * T 512 to 8192); C_K = 8 is eight times the largest err / (u kappa_G)
 * measured on the chunked and affine-prefix kernels (1.07, over seeds 1-4
 * and Kimi gates scaled by 0.3 to 30: docs/numerics.md, "Kimi Delta
 * Attention").  With kappa_G 40 to 110 the band is 4e-6 to 6e-5, under the
 * fixed 2^-12 it replaces, and the mutants (errors 0.3 to 1) fail it by four
 * orders of magnitude. */
#define PARITY_RECUR_KAPPA_C 8.0
#define PARITY_RECUR_KAPPA_F 64.0
#define PARITY_RECUR_MAX_CHUNKS 16

typedef struct parity_recur_opts {
  const parity_recurrence *rec;
  gdn_shape shape;
  uint64_t seed;
  int h0;
  int64_t chunks[PARITY_RECUR_MAX_CHUNKS];
  int n_chunks;
  int64_t devices[PARITY_RECUR_MAX_CHUNKS]; /* affine-prefix device counts (none: no such case) */
  int n_devices;
  kern_prefix prefix; /* the affine-prefix's schedule and shard mode (kern_config.h; sequential, tokens) */
  kern_shard shard;   /* chunks: the band's kappa_G on the unsharded chunk grid */
  gdn_dtype dtype;    /* the forward kernels' numerics (float32, ieee, no FTZ by default); */
  kern_matmul matmul; /* the band follows them (parity_recur_mode_band.h) */
  int ftz;
  kern_solve solve;   /* the chunked kernels' in-chunk solve (the token kernel has none); no band of its own */
  int oracle_bits;
  int dd;        /* 1: the oracle's double-word tier (2 sampled columns per head at oracle_bits) */
  int oracle_auto; /* --oracle auto: the forward's MPFR tier; --grad's VJP by parity_oracle_resolve_grads */
  int mutant;    /* index into rec->mutants */
  int vjp_mutant; /* --grad only: index into rec->vjp_mutants (parity_recur_grad.h) */
  double band;
  FILE *log;     /* a line per case (NULL: silent) */
} parity_recur_opts;

/* The band of a case of rec at chunk C (<= 0: the token kernel) on D
 * devices (<= 0: one).  A per-channel gate: band = u (C_K kappa_G + F) above,
 * kappa_G per channel of gate over in at (C, D) (parity_kappa_ch.h) with *kc
 * its values and *kj the case's "kappa_g" object {"worst_channel", "value",
 * "o", "ht", "median_channel"} (JSON null for the token kernel), the
 * caller's reference.  Otherwise band = fixed and *kj = NULL.  The sweep
 * and check (parity_recur_check.h) both judge by it. */
int parity_recur_case_band(const parity_recurrence *rec, const gdn_inputs *in, const gdn_chgate *gate, int64_t C,
                           int64_t D, double fixed, double *band, json_t **kj, parity_kappa_ch *kc, gdn_error *e);

/* Normwise relative error of x against r over n elements: max |x - r| /
 * max |r| (0 / 0 is 0, d / 0 is inf; a NaN anywhere makes it inf), with
 * the flat index of the largest |x - r| (the first NaN's).  The sweep, its
 * backward (parity_recur_grad.h) and check all measure by it. */
typedef struct parity_recur_err {
  double err, max_abs, max_ref;
  size_t at;
} parity_recur_err;
parity_recur_err parity_recur_measure(const double *x, const double *r, size_t n);

/* The band and "kappa_g" of a case from its kappa per channel kc (computed
 * by the caller, e.g. merged over head groups): parity_recur_case_band's
 * second half. */
int parity_recur_band_of(const parity_recurrence *rec, int64_t C, const parity_kappa_ch *kc, double fixed,
                         double *band, json_t **kj, gdn_error *e);

/* What the oracle certified, for the document and the log. */
typedef struct parity_recur_cert {
  const char *tier;
  int precision_bits, check_bits, certified_bits, normwise_bits;
  int64_t sampled_columns;
} parity_recur_cert;

/* The pieces of the sweep's document, shared with the run streamed by
 * key-head group (parity_recur_stream.h): the head (no cases yet); one case
 * judged from its measurements (kj: its "kappa_g", taken over; the log
 * line); the counts and verdict after the last case. */
json_t *parity_recur_doc_head(const parity_recur_opts *o, const parity_recur_cert *c);
int parity_recur_case_record(const parity_recur_opts *o, int64_t C, int64_t D, parity_recur_err eo,
                             parity_recur_err eh, double band, json_t *kj, const parity_kappa_ch *kc, json_t *cases,
                             int *failed, gdn_error *e);
int parity_recur_doc_finish(json_t *d, int failed, int *pass, gdn_error *e);

/* The kernel configuration of a case (chunk C > 0, devices D > 0; else
 * the kernel's defaults) under o's prefix, shard and numerics modes; and
 * the device count its kappa_G is taken on (0, the unsharded chunk grid,
 * under chunk sharding).  The sweep, its backward and the runs streamed by
 * key-head group all configure and judge a case by these. */
void parity_recur_kern_config(const parity_recur_opts *o, int64_t C, int64_t D, kern_config *cfg);
int64_t parity_recur_kappa_devices(const parity_recur_opts *o, int64_t D);

/* 64-chunk sweep of rec on devices 1, 2, 4, 8, seed 0, no h0, 128 bits, no
 * mutant, the float32 band. */
void parity_recur_opts_init(parity_recur_opts *o, const parity_recurrence *rec);

/* Runs the sweep; *doc (set on success, the caller's reference) is the
 * document above and *pass its verdict. */
int parity_recur_sweep(const parity_recur_opts *o, json_t **doc, int *pass, gdn_error *e);

#endif
