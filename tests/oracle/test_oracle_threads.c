/* Determinism: the thread count and the token form's column block never
 * change a bit of the outputs or of the certificate.  Items are independent
 * and each is computed identically whichever thread takes it, so any
 * difference here is a bug (shared scratch, a reduction across items, a
 * block-dependent per-token quantity). */
#include <check.h>

#include "gdn_threads.h"
#include "oracle_test_util.h"
#include "../check_runner.h"

static void run_with(const gdn_inputs *in, oracle_config cfg, int threads, gdn_outputs *out,
                     oracle_certificate *cert) {
  gdn_threads_set(threads);
  if (cert)
    otu_run_cert(in, &cfg, out, cert);
  else
    otu_run(in, &cfg, out);
}

START_TEST(one_vs_two_threads) {
  /* 2 x 3 value heads, Dv = 20: 6 chunked items; token items of up to 8
   * columns, the last block partial. */
  gdn_inputs in = tsu_inputs((gdn_shape){2, 33, 1, 3, 12, 20}, GDN_SYNTH_H0, 31);
  const struct { oracle_form f; int64_t C; } forms[] = {{ORACLE_FORM_TOKEN, 0},
                                                        {ORACLE_FORM_CHUNKED, 8}};
  for (int fi = 0; fi < 2; fi++) {
    oracle_config cfg = otu_cfg(80, forms[fi].f, forms[fi].C);
    gdn_outputs a, b, c;
    oracle_certificate ca, cb;
    run_with(&in, cfg, 1, &a, NULL);
    run_with(&in, cfg, 2, &b, NULL);
    ck_assert_msg(otu_identical(&a, &b), "form %d: 1 and 2 threads differ", (int)forms[fi].f);
    gdn_outputs_clear(&b);
    run_with(&in, cfg, 1, &b, &ca);
    run_with(&in, cfg, 2, &c, &cb);
    ck_assert(otu_identical(&a, &b) && otu_identical(&a, &c));
    ck_assert(ca.certified_o == cb.certified_o && ca.certified_ht == cb.certified_ht &&
              ca.certified_bits == cb.certified_bits && ca.floor_o == cb.floor_o &&
              ca.floor_ht == cb.floor_ht && ca.check_bits == cb.check_bits);
    gdn_outputs_clear(&a);
    gdn_outputs_clear(&b);
    gdn_outputs_clear(&c);
  }
  gdn_threads_set(2);
  gdn_inputs_clear(&in);
}
END_TEST

/* The column block only groups columns into work items: 1, 3 (not dividing
 * Dv = 20), 20 and the automatic choice give identical outputs. */
START_TEST(column_block_changes_nothing) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 25, 2, 2, 10, 20}, GDN_SYNTH_H0, 32);
  oracle_config cfg = otu_cfg(72, ORACLE_FORM_TOKEN, 0);
  gdn_outputs ref;
  run_with(&in, cfg, 2, &ref, NULL);
  const int64_t blocks[] = {1, 3, 20, 1000};
  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
    cfg.column_block = blocks[i];
    gdn_outputs out;
    run_with(&in, cfg, 2, &out, NULL);
    ck_assert_msg(otu_identical(&out, &ref), "column_block %lld changes the outputs",
                  (long long)blocks[i]);
    gdn_outputs_clear(&out);
  }
  gdn_outputs_clear(&ref);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("oracle_threads", "threads", 60, one_vs_two_threads, column_block_changes_nothing)
