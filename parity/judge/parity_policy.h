/* parity_policy: the tolerance policy, a JSON document of rules.
 *
 * The built-in policy is itself JSON text compiled into the binary
 * (parity_policy_builtin.c); `gdn-parity --print-policy` prints exactly that
 * text and `--policy FILE` replaces it.  Every rule carries a one-line
 * reason; every verdict names the check that decided it.
 *
 * A rule applies to a case when its selectors match (absent = any):
 *   "dtype":   compute dtype(s) ("float32", "bfloat16", "float64")
 *   "matmul":  matmul precision mode(s) ("ieee", "default", "high", "highest")
 *   "oracle":  true (only with an oracle) / false (only with --oracle none)
 *   "subject": "scan" | "affine-prefix" | "external" (a fixture's /outputs)
 *   "output":  the dtype the judged tensor was rounded to (o is cast to the
 *              input dtype, so bfloat16 inputs give a bfloat16 o)
 * and yields one check per tensor in "tensors" (["o", "ht"]) on "metric"
 * (rel_fro | max_abs | max_rel | max_ulp | median_ulp | block_rel |
 * elem_rel | row_rel; see parity_metrics.h).  A rule without "tensors"
 * judges the forward's o and ht; gradient rules name their tensors (dq dk
 * dv dg dbeta dh0, measured with --grad).  Kinds:
 *   "absolute"       subject vs oracle:  value <= limit
 *   "relative"       subject vs oracle:  value <= factor * max(scan's value, floor)
 *                    (the core rule: no worse than the stock scan by more
 *                    than `factor`, with a floor so a scan that happens to be
 *                    nearly exact does not make round-off fail)
 *   "vs-scan"        subject vs the stock scan directly: value <= limit (the
 *                    judgement when there is no oracle: --oracle none)
 *   "localized"      as "relative", on a localized statistic only (block_rel:
 *                    the worst block per head and chunk; elem_rel / max_rel:
 *                    the worst element), and the check names where the worst block or
 *                    element sits (b, head, token range, the seam it follows):
 *                    a normwise rule dilutes an error confined to a seam, a
 *                    shard or a head by sqrt(its share of the tensor)
 * Limits and floors are given absolutely ("limit", "floor") or in units of
 * the compute dtype's unit roundoff u ("limit_u", "floor_u"; u = 2^-24 for
 * float32, 2^-8 for bfloat16, 2^-53 for float64).
 *
 * An absolute or vs-scan rule may also follow the stock algorithm's condition measure:
 * with "kappa_g_u": c its effective limit is max(limit, c kappa_G u_G), where
 * kappa_G is the case's parity_kappa_g for the judged tensor (the size of
 * the in-chunk cumulative log-decay G, weighted by the decays that carry
 * its rounding error, parity_kappa.h) and u_G the unit roundoff G is summed in
 * (2^-24 for float32 and bfloat16 compute, whose g and G stay float32;
 * 2^-53 for float64).  While c kappa_G u_G <= limit (ordinary gates) the
 * check is exactly the constant rule; above it the check records kappa_G
 * and its name says the band follows it.
 *
 * A relative or localized rule with "model": true follows the error model
 * (parity_kappa_model.h: per element, the first-order effect of G's float32
 * rounding, beside the reference) where the case has one (an oracle and
 * float32 or bfloat16 compute): on rel_fro its limit is the larger of the
 * rule's and its factor x the model's normwise scale; on block_rel,
 * elem_rel and row_rel only the blocks, elements or rows beyond lambda x
 * their own model scale count (the value is the worst of those, 0 when none),
 * held to the rule's limit.  So an element fails when its error exceeds
 * both its model bound and the rule's relative limit.  docs/tolerance.md.
 */
#ifndef PARITY_POLICY_H
#define PARITY_POLICY_H

#include <stddef.h>

#include "gdn_dtype.h"
#include "gdn_error.h"
#include "kern_config.h"
#include "parity_metrics.h"
#include "parity_subject.h"
#include "parity_tensor.h"

typedef enum parity_rule_kind {
  PARITY_RULE_ABSOLUTE = 0,
  PARITY_RULE_RELATIVE = 1,
  PARITY_RULE_VS_SCAN = 2,
  PARITY_RULE_LOCALIZED = 3,
} parity_rule_kind;

typedef enum parity_metric_id {
  PARITY_M_REL_FRO = 0,
  PARITY_M_MAX_ABS,
  PARITY_M_MAX_REL,
  PARITY_M_MAX_ULP,
  PARITY_M_MEDIAN_ULP,
  PARITY_M_BLOCK_REL,
  PARITY_M_ELEM_REL,
  PARITY_M_ROW_REL, /* per-token error (parity_metrics.h): the localized gradient rule */
} parity_metric_id;

typedef struct parity_rule {
  char id[64];
  parity_rule_kind kind;
  unsigned subjects;    /* PARITY_SUBJ_* bits (parity_subject_kind_names) */
  unsigned dtypes;      /* bit per gdn_dtype (0 = all) */
  unsigned matmuls;     /* bit per kern_matmul (0 = all) */
  unsigned outputs;     /* bit per gdn_dtype of the judged tensor (0 = all) */
  int oracle;           /* -1 any, 0 only without, 1 only with */
  unsigned tensors;     /* bit per parity_tensors row; absent = o and ht (PARITY_TENSOR_FORWARD) */
  parity_metric_id metric;
  double limit, limit_u, factor, floor, floor_u;
  double kappa_g_u; /* absolute and vs-scan rules: the limit is max(limit, kappa_g_u kappa_G u_G); 0 = constant */
  int model;        /* relative and localized rules: follow the error model where the case has one (below) */
  char reason[1024];
} parity_rule;

typedef struct parity_policy {
  char name[128];
  char source[512]; /* "built in" or the file path */
  int builtin;      /* loaded by parity_policy_load_builtin */
  char sha256[65];  /* of the policy text */
  size_t n_rules;
  parity_rule *rules;
} parity_policy;

void parity_policy_init(parity_policy *p);
void parity_policy_clear(parity_policy *p);
const char *parity_policy_builtin_text(void);
int parity_policy_load_builtin(parity_policy *p, gdn_error *e);
int parity_policy_load_file(parity_policy *p, const char *path, gdn_error *e);
/* Strict: unknown keys, wrong types, missing reason, bad selector names and
 * non-positive limits are errors naming the source, the rule and the key. */
int parity_policy_parse(parity_policy *p, const char *text, const char *source, gdn_error *e);

/* How messages name the policy: "policy FILE (name 'N')" for a file --
 * the path the user gave, which the name field need not resemble -- and
 * "the built-in policy" otherwise; both escaped (gdn_text_show).  buf, n
 * bytes; returns buf. */
const char *parity_policy_label(const parity_policy *p, char *buf, size_t n);

/* 1 when some rule follows the error model ("model": true): a sweep
 * computes the model (parity_kappa_model.h) only then. */
int parity_policy_uses_model(const parity_policy *p);

const char *parity_metric_name(parity_metric_id m);
double parity_metric_value(const parity_metrics *m, parity_metric_id id);

/* What one case offers the policy: a table of subjects, each with metrics
 * per parity_tensors row (NULL when that pair was not measured). */
typedef struct parity_subject {
  const char *name;                   /* "scan", "affine-prefix", or an output name */
  unsigned kind;                      /* PARITY_SUBJ_* */
  const parity_metrics *vs_oracle[PARITY_T_N];
  const parity_metrics *vs_scan[PARITY_T_N];
  /* A fixture output that declares its own numerics (compute_dtype,
   * matmul_precision) is held to the rules of those numerics; the relative
   * and vs-scan rules then apply only if they equal the case's (the scan
   * baseline is computed with the case's numerics). */
  int own_numerics;
  gdn_dtype dtype;
  kern_matmul matmul;
  gdn_dtype out_dtype[PARITY_T_N]; /* the dtype each tensor was rounded to */
} parity_subject;

typedef struct parity_case_view {
  gdn_dtype dtype;
  kern_matmul matmul;
  int has_oracle;
  const parity_metrics *scan_vs_oracle[PARITY_T_N]; /* baseline of the relative rule */
  size_t n_subjects;
  const parity_subject *subjects;
  const int64_t *seam_t; /* first real token after the seam of device i + 1 (n_seams; may be NULL) */
  size_t n_seams;
  double kappa_g[PARITY_T_N]; /* parity_kappa_g of the case's inputs and chunk per tensor row (o, ht;
                                0: unknown or none, no rule widens) */
} parity_case_view;

typedef struct parity_check {
  char name[160];      /* "affine-prefix o rel_fro <= 2 x max(scan, 16u)" */
  const parity_rule *rule;
  const char *subject;  /* the subject's name (borrowed from the view) */
  size_t subject_index; /* into parity_case_view.subjects */
  int tensor;          /* PARITY_TENSOR_* bit: 1 << parity_tensor_id */
  double value, limit; /* limit: the effective bound the value was held to */
  double factor_reached; /* relative rules: value / max(scan, floor); else value / limit */
  int pass;
  char where[192];     /* localized statistics: the worst block or element ("" otherwise) */
  double kappa_g;      /* > 0: the limit is the rule's kappa_g_u kappa_G u_G, wider than its constant */
  int64_t nonfinite;   /* > 0: that many NaN or inf values in the tensor judged: the check fails
                          whatever its metric reads, and `where` names the first */
  /* The error model (rule "model", parity_metrics.h's parity_model_stats), has_model 1 when used:
   * model_raw the metric's own value; model_lambda the multiplier of the model's scale; model_sig the
   * deciding item's error in standard errors of the model (|x - r| / s; normwise: rel_fro / the
   * model's rel_fro); model_ratio the worst item's error as a multiple of its model bound (lambda s);
   * model_bound (normwise) lambda x the model's rel_fro; model_widened: that bound is the limit. */
  int has_model, model_widened;
  double model_raw, model_lambda, model_sig, model_ratio, model_bound;
} parity_check;

/* A growing list of checks; `deciding` indexes the deciding one. */
typedef struct parity_checks {
  parity_check *v;
  size_t n, cap, deciding;
} parity_checks;

void parity_checks_init(parity_checks *c);
void parity_checks_clear(parity_checks *c);
/* A zeroed slot at the end (growing the list), or NULL with GDN_ERR_NOMEM. */
parity_check *parity_checks_push(parity_checks *c, gdn_error *e);
/* Pass of the checks of subject `si` (1 when it has none). */
int parity_checks_subject_pass(const parity_checks *c, size_t si);
/* The deciding check of subject `si` (its first failing check, else its
 * largest value / limit), or SIZE_MAX when it has none. */
size_t parity_checks_subject_deciding(const parity_checks *c, size_t si);

/* Fills k->where for statistic `id` of tensor row ti: "worst block b=0 h=3
 * t=[4096, 4160), 0 tokens after the seam of device 2 (t=4096)" or "worst
 * element b=.. t=.. h=.. d=..". */
void parity_check_locate(parity_check *k, const parity_case_view *c, int ti, const parity_metrics *m,
                         parity_metric_id id);

/* All checks of the policy for one case: for each rule in order, each
 * tensor row it names, each subject of the view whose kind it names.  No
 * count limit.  out->deciding is the first failing check, or when all pass
 * the one closest to its limit (largest value / limit).  GDN_ERR_INPUT if
 * some subject with metrics gets no check (see below). */
int parity_policy_judge(const parity_policy *p, const parity_case_view *c, parity_checks *out, gdn_error *e);

/* As parity_policy_judge into a caller's array of `cap` checks; *deciding is the
 * first failing check, or when all pass the one closest to its limit
 * (largest value / limit).  Returns GDN_ERR_INPUT if some subject with
 * metrics gets no check at all: a policy must say something about
 * everything it judges, or the gate would pass what it never looked at. */
int parity_policy_evaluate(const parity_policy *p, const parity_case_view *c, parity_check *out,
                           size_t cap, size_t *n, size_t *deciding, gdn_error *e);

#endif
