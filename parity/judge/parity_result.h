/* parity_result: what a case found, as plain C types.
 *
 * The sweep fills these and nothing else; each output serializes them in
 * one place: the results JSON in parity_json.c (parity_json_case), the
 * console table in parity_log.c.  The reports read the JSON.
 *
 * Ownership: parity_case_result owns its arrays (init/clear, clear safe
 * twice); subject names, rules and attrs are borrowed from the subject runs
 * and the policy, which outlive the result.
 */
#ifndef PARITY_RESULT_H
#define PARITY_RESULT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_shape.h"
#include "kern_config.h"
#include "parity_metrics.h"
#include "parity_oracle.h"
#include "parity_policy.h"
#include "parity_subject.h"
#include "parity_tensor.h"
#include "parity_upstream.h"

/* Where an input set came from (borrowed strings). */
typedef struct parity_input_info {
  const char *name;   /* "synthetic seed 0", a fixture's file name */
  const char *source; /* "synthetic" or "fixture" */
  const char *path;   /* fixture path or NULL */
  const char *sha256; /* schema-v1 inputs_sha256, or NULL */
} parity_input_info;

/* One input set as the results list it (everything borrowed). */
typedef struct parity_input_result {
  const parity_input_info *info;
  const gdn_inputs *in;
  const parity_reference *ref; /* NULL when there is no reference (--oracle none) */
  const parity_subject_run *subjects; /* the input's subject table */
  size_t n_subjects;
} parity_input_result;

/* One subject of one case: its metrics for every tensor row. */
typedef struct parity_subject_result {
  const char *name;          /* borrowed */
  unsigned kind;             /* PARITY_SUBJ_* */
  parity_subject_role role;
  int own_numerics;
  gdn_dtype dtype;           /* declared numerics (own_numerics) */
  kern_matmul matmul;
  const json_t *attrs;       /* an external output's attributes, borrowed, or NULL */
  unsigned has_vs_ref;       /* PARITY_TENSOR_* bits measured against the reference */
  unsigned has_vs_scan;      /* ... and against the stock scan */
  gdn_dtype out_dtype[PARITY_T_N];
  parity_metrics vs_ref[PARITY_T_N];
  parity_metrics vs_scan[PARITY_T_N];
  int pass;                  /* its own checks all pass (1 with none) */
  size_t deciding;           /* its deciding check, SIZE_MAX with none */
  int other_case;            /* an external output declaring another device count than the case's:
                                not judged, not recorded in it (parity_sweep_case_scope) */
} parity_subject_result;

/* The first chunk after the seam between device r - 1 and r. */
typedef struct parity_seam_result {
  int64_t device, chunk, t;
  int64_t pad_before;        /* padding tokens of device r - 1 right before the seam */
  int has_state;             /* state_rel was measured (seam states recorded) */
  double state_rel;          /* ||h_in[r] - h_out[r-1]||_F / ||h_out[r-1]||_F */
  double baseline, candidate; /* max |x - ref| over that chunk's o (has_ref) */
  double cand_vs_base;       /* max |candidate - baseline| */
} parity_seam_result;

/* Max error per block of positions along the sequence (o). */
typedef struct parity_profile {
  int64_t block, n;
  double *ref_max_abs, *baseline, *candidate, *cand_vs_base; /* n each */
} parity_profile;

/* --grad: max |x - ref| per block of positions (the o profile's blocks)
 * for each gradient with a token axis (dq dk dv dg dbeta), the baseline's
 * and the candidate's against the reference's gradients, and max |ref|.
 * mask: the PARITY_TENSOR_* rows held (0 without gradients). */
typedef struct parity_grad_profile {
  unsigned mask;
  int64_t n;
  double *ref_max_abs[PARITY_T_N], *baseline[PARITY_T_N], *candidate[PARITY_T_N]; /* n each */
} parity_grad_profile;

typedef struct parity_case_result {
  char id[256];
  int64_t input;             /* index into the document's inputs */
  gdn_shape shape;
  int64_t chunk, devices;
  kern_prefix prefix;
  gdn_dtype dtype, output_dtype;
  kern_matmul matmul;
  int ftz, has_ref;
  kern_shard shard;          /* how the sequence is split over devices */
  const char *shard_from;    /* check: declared, option or default (static); NULL elsewhere */
  kern_solve solve;          /* the in-chunk triangular solve */
  kern_mutant mutant;        /* testing only: the affine-prefix bug switched on (kern_mutant.h) */
  int packing;               /* gdn_packing of packed inputs, -1 without segment ids */
  int64_t *shards;           /* (first chunk, count) per device: 2 * devices */
  int64_t *pieces;           /* (first real token, end of real tokens, padding after) per device: 3 * devices */
  parity_seam_result *seams; /* devices - 1 */
  size_t n_seams;
  parity_subject_result *subjects; /* in the case's subject order */
  size_t n_subjects;
  size_t baseline, candidate; /* indices of the roles (SIZE_MAX: absent) */
  parity_checks checks;      /* checks.deciding decides the case */
  parity_upstream upstream[PARITY_UPSTREAM_N];
  parity_profile profile;
  parity_grad_profile grad_profile;
  int pass;
  double seconds;            /* producing the per-case subjects */
  struct {                   /* block error over (head, position) for the report's heat map */
    const char *subject;     /* the judged subject with the worst o block_rel (borrowed); NULL: none */
    int64_t heads, bins, tokens_per_bin;
    double *values;          /* heads x bins, parity_block_map_o */
  } block_map;
  char finding[768];         /* what the numbers mean beyond pass/fail ("" if nothing): parity_sweep's
                                range finding (outputs too small for the compute dtype's range) and
                                stock-algorithm finding (a band widened by kappa_G), "; " between */
  double kappa_g[2];         /* parity_kappa_g of the case's inputs at its chunk size: o, ht (parity_kappa.h) */
  /* The case's own subject (parity_case_subject.h): a judged output of this
   * case's device count that is not a stock scan, which the upstream checks,
   * the profile along the sequence (subject_profile, profile.n blocks) and
   * the ULP histogram are about; SIZE_MAX: none (our candidate is). */
  size_t subject, subject_against;
  double *subject_profile;
  parity_metrics subject_vs[PARITY_T_N]; /* the subject against subject_against (upstream's comparison) */
  unsigned subject_vs_mask;
} parity_case_result;

void parity_case_result_init(parity_case_result *r);
void parity_case_result_clear(parity_case_result *r);
/* Sizes the arrays for `devices` devices, `n_subjects` subjects and
 * `n_blocks` profile blocks (zeroed); r must be freshly initialised. */
/* Sizes grad_profile for the rows in `mask` over profile.n blocks. */
int parity_case_result_alloc_grads(parity_case_result *r, unsigned mask, gdn_error *e);
int parity_case_result_alloc(parity_case_result *r, int64_t devices, size_t n_subjects, int64_t n_blocks,
                             gdn_error *e);

#endif
