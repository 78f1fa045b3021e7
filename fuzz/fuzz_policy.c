/* The JSON tolerance policy (parity_policy_parse, as --policy FILE reads
 * it), then evaluate on a fixed case with every kind of subject so the
 * parsed selectors and limits are used, not only read. */
#include <math.h>

#include "fuzz_util.h"
#include "parity_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  char *text = fuzz_cstring(data, n);
  if (!text) return 0;
  parity_policy p;
  parity_policy_init(&p);
  gdn_error e;
  gdn_error_init(&e);
  int rc = parity_policy_parse(&p, text, "fuzz.json", &e);
  fuzz_check_error(rc, &e);
  FUZZ_CHECK(rc == GDN_OK || (p.n_rules == 0 && p.rules == NULL), "failed parse left rules");
  if (!rc) {
    for (size_t i = 0; i < p.n_rules; i++) {
      const parity_rule *r = &p.rules[i];
      FUZZ_CHECK(r->id[0] && r->reason[0], "rule %zu without id or reason", i);
      FUZZ_CHECK((unsigned)r->metric <= PARITY_M_ROW_REL && (unsigned)r->kind <= PARITY_RULE_LOCALIZED,
                 "rule %zu: metric %d kind %d", i, r->metric, r->kind);
    }
    parity_metrics m[2];
    memset(m, 0, sizeof m);
    m[0].rel_fro = 1e-7, m[0].max_abs = 1e-6, m[0].max_rel = 1e-5, m[0].max_ulp = 3, m[0].median_ulp = 1;
    m[1] = m[0];
    m[1].max_ulp = NAN; /* a NaN metric must fail a check, never pass one */
    parity_subject subj[3] = {
        {"scan", PARITY_SUBJ_SCAN, {&m[0], &m[1]}, {NULL, NULL}, 0, GDN_DTYPE_F32, KERN_MATMUL_IEEE,
         {GDN_DTYPE_F32, GDN_DTYPE_F32}},
        {"affine-prefix", PARITY_SUBJ_AFFINE, {&m[0], &m[1]}, {&m[0], &m[1]}, 0, GDN_DTYPE_F32,
         KERN_MATMUL_IEEE, {GDN_DTYPE_F32, GDN_DTYPE_F32}},
        {"tpu", PARITY_SUBJ_EXTERNAL, {&m[1], NULL}, {&m[0], NULL}, 1, GDN_DTYPE_BF16, KERN_MATMUL_HIGHEST,
         {GDN_DTYPE_BF16, GDN_DTYPE_F32}},
    };
    /* kappa_G for o and ht: rules with kappa_g_u widen, never pass a NaN */
    parity_case_view cv = {GDN_DTYPE_F32, KERN_MATMUL_IEEE, 1, {&m[0], &m[1]}, 3, subj, NULL, 0, {300, 5}};
    parity_check checks[256];
    size_t nc = 0, dec = 0;
    rc = parity_policy_evaluate(&p, &cv, checks, 256, &nc, &dec, &e);
    fuzz_check_error(rc, &e);
    if (!rc) {
      FUZZ_CHECK(nc <= 256 && (nc == 0 || dec < nc), "deciding %zu of %zu", dec, nc);
      for (size_t i = 0; i < nc; i++)
        FUZZ_CHECK(!(checks[i].pass && isnan(checks[i].value)), "check '%s' passed a NaN", checks[i].name);
    }
  }
  parity_policy_clear(&p);
  free(text);
  return 0;
}
