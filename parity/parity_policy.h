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
 * (rel_fro | max_abs | max_rel | max_ulp | median_ulp).  Kinds:
 *   "absolute"       subject vs oracle:  value <= limit
 *   "relative"       subject vs oracle:  value <= factor * max(scan's value, floor)
 *                    (the core rule: no worse than the stock scan by more
 *                    than `factor`, with a floor so a scan that happens to be
 *                    nearly exact does not make round-off fail)
 *   "vs-scan"        subject vs the stock scan directly: value <= limit (the
 *                    judgement when there is no oracle: --oracle none)
 * Limits and floors are given absolutely ("limit", "floor") or in units of
 * the compute dtype's unit roundoff u ("limit_u", "floor_u"; u = 2^-24 for
 * float32, 2^-8 for bfloat16, 2^-53 for float64).
 */
#ifndef PARITY_POLICY_H
#define PARITY_POLICY_H

#include <stddef.h>

#include "gdn_dtype.h"
#include "gdn_error.h"
#include "kern_config.h"
#include "parity_metrics.h"

typedef enum parity_rule_kind {
  PARITY_RULE_ABSOLUTE = 0,
  PARITY_RULE_RELATIVE = 1,
  PARITY_RULE_VS_SCAN = 2,
} parity_rule_kind;

typedef enum parity_metric_id {
  PARITY_M_REL_FRO = 0,
  PARITY_M_MAX_ABS,
  PARITY_M_MAX_REL,
  PARITY_M_MAX_ULP,
  PARITY_M_MEDIAN_ULP,
} parity_metric_id;

enum { PARITY_SUBJ_SCAN = 1u, PARITY_SUBJ_AFFINE = 2u, PARITY_SUBJ_EXTERNAL = 4u };
enum { PARITY_TENSOR_O = 1u, PARITY_TENSOR_HT = 2u };

typedef struct parity_rule {
  char id[64];
  parity_rule_kind kind;
  unsigned subjects;    /* PARITY_SUBJ_* (0 = all) */
  unsigned dtypes;      /* bit per gdn_dtype (0 = all) */
  unsigned matmuls;     /* bit per kern_matmul (0 = all) */
  unsigned outputs;     /* bit per gdn_dtype of the judged tensor (0 = all) */
  int oracle;           /* -1 any, 0 only without, 1 only with */
  unsigned tensors;     /* PARITY_TENSOR_* */
  parity_metric_id metric;
  double limit, limit_u, factor, floor, floor_u;
  char reason[1024];
} parity_rule;

typedef struct parity_policy {
  char name[128];
  char source[512]; /* "built in" or the file path */
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

const char *parity_metric_name(parity_metric_id m);
double parity_metric_value(const parity_metrics *m, parity_metric_id id);

/* What one case offers the policy. */
typedef struct parity_subject {
  const char *name;                   /* "scan", "affine-prefix", or an output name */
  unsigned kind;                      /* PARITY_SUBJ_* */
  const parity_metrics *vs_oracle[2]; /* o, ht (NULL when absent) */
  const parity_metrics *vs_scan[2];   /* o, ht (NULL when absent) */
  /* A fixture output that declares its own numerics (compute_dtype,
   * matmul_precision) is held to the rules of those numerics; the relative
   * and vs-scan rules then apply only if they equal the case's (the scan
   * baseline is computed with the case's numerics). */
  int own_numerics;
  gdn_dtype dtype;
  kern_matmul matmul;
  gdn_dtype out_dtype[2]; /* the dtype o and ht were rounded to */
} parity_subject;

typedef struct parity_case_view {
  gdn_dtype dtype;
  kern_matmul matmul;
  int has_oracle;
  const parity_metrics *scan_vs_oracle[2]; /* baseline of the relative rule */
  size_t n_subjects;
  const parity_subject *subjects;
} parity_case_view;

typedef struct parity_check {
  char name[160];      /* "affine-prefix o rel_fro <= 2 x max(scan, 16u)" */
  const parity_rule *rule;
  const char *subject;
  int tensor;          /* PARITY_TENSOR_O or _HT */
  double value, limit; /* limit: the effective bound the value was held to */
  double factor_reached; /* relative rules: value / max(scan, floor); else value / limit */
  int pass;
} parity_check;

/* All checks of the policy for one case, in rule order; *deciding is the
 * first failing check, or when all pass the one closest to its limit
 * (largest value / limit).  Returns GDN_ERR_INPUT if some subject with
 * metrics gets no check at all: a policy must say something about
 * everything it judges, or the gate would pass what it never looked at. */
int parity_policy_evaluate(const parity_policy *p, const parity_case_view *c, parity_check *out,
                           size_t cap, size_t *n, size_t *deciding, gdn_error *e);

#endif
