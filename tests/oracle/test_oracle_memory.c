/* Memory does not grow with T: the token form streams the state, the
 * chunked form holds one chunk, the certificate accumulates per-bucket
 * maxima.  Everything that grows with T (the outputs) is allocated through
 * gdn_alloc, so the MPFR/GMP heap -- counted here by installing counting
 * allocators with mp_set_memory_functions -- must peak at the same number of
 * live bytes for T = 64 and T = 1024, and return to where it started (no
 * MPFR number or cache left behind). */
#include <check.h>
#include <gmp.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "gdn_threads.h"
#include "gmp_count_util.h"
#include "oracle_test_util.h"
#include "../check_runner.h"

/* Peak live GMP bytes above the starting level during one run; checks the
 * level is back where it started afterwards. */
static long peak_of(const gdn_inputs *in, const oracle_config *cfg, int certified) {
  long base = gcu_mark();
  gdn_outputs out;
  oracle_certificate cert;
  if (certified)
    otu_run_cert(in, cfg, &out, &cert);
  else
    otu_run(in, cfg, &out);
  gdn_outputs_clear(&out);
  ck_assert_msg(gcu_live() == base, "GMP heap: %ld bytes left after the run",
                gcu_live() - base);
  return gcu_peak() - base;
}

static void check_flat(oracle_form form, int64_t C, int certified) {
  gdn_threads_set(1); /* with several threads the peak depends on timing */
  /* The first MPFR work of a process peaks 8 bytes higher than every later
   * run (a one-time allocation inside MPFR, freed again): a warm-up run of
   * T = 64 comes first, and the comparison is between later runs. */
  long peaks[3];
  const int64_t Ts[3] = {64, 64, 1024};
  for (int i = 0; i < 3; i++) {
    gdn_inputs in = tsu_inputs((gdn_shape){1, Ts[i], 1, 2, 16, 16}, GDN_SYNTH_H0, 41);
    oracle_config cfg = otu_cfg(128, form, C);
    peaks[i] = peak_of(&in, &cfg, certified);
    gdn_inputs_clear(&in);
  }
  ck_assert_msg(peaks[1] > 0, "no GMP allocation seen: the counting allocator is not installed");
  ck_assert_msg(peaks[1] == peaks[2],
                "form %d C=%lld certified %d: GMP heap peak %ld bytes at T=64, %ld at T=1024",
                (int)form, (long long)C, certified, peaks[1], peaks[2]);
}

START_TEST(token_form_flat) { check_flat(ORACLE_FORM_TOKEN, 0, 0); }
END_TEST
START_TEST(chunked_form_flat) { check_flat(ORACLE_FORM_CHUNKED, 16, 0); }
END_TEST
START_TEST(certified_flat) { check_flat(ORACLE_FORM_TOKEN, 0, 1); }
END_TEST

int main(void) {
  /* Before any GMP allocation in this process (Check forks after this, and
   * the children inherit the functions). */
  gcu_install();
  Suite *su = suite_create("oracle_memory");
  CKR_TCASE(su, "memory", 60, token_form_flat, chunked_form_flat, certified_flat);
  return ckr_run(su);
}
