/* gdn-fixture regen --oracle dd of a Kimi Delta Attention fixture
 * (fix_kda_regen.c): the /oracle stored is the KDA dd tier's o and ht bit
 * for bit (oracle_kda_run_dd on the file's inputs), with tier "dd",
 * precision_bits 106 and its dd_certificate as GDN's dd regen stores them;
 * check trusts it (fresh, the attribute table, the spot check) and reports
 * tier dd with the stored certificate, its errors those of the MPFR
 * reference to 1e-9 relative, PASS.  Negative controls: a dd_certificate
 * out of range, a certificate missing and precision_bits other than 106
 * are refused by name (exit 2, as GDN's reader refuses them); a value
 * planted in /oracle/o is caught by the spot check (recomputed, noted).
 * (--oracle dd with --group-heads: test_kda_regen_group.)  Small shape: a
 * few seconds. */
#include <check.h>
#include <hdf5.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fixtures/h5_edit.h"
#include "cli_inproc.h"
#include "cli_run.h"
#include "fix_kda.h"
#include "fix_regen.h"
#include "fix_string.h"
#include "fix_synth_grads.h"
#include "fix_write.h"
#include "gdn_chgate.h"
#include "gdn_synth.h"
#include "oracle_kda.h"
#include "../scratch_case.h"

static const char *exe_fixture; /* argv[1]: the gdn-fixture program */

static const gdn_shape shape = {1, 96, 1, 2, 16, 16}; /* B T Hk Hv Dk Dv */

/* synth's KDA fixture with h0 and the kernel outputs at D = 1 and 8. */
static void write_kda(const char *p) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_synth_opts so = {7, GDN_SYNTH_H0, 0};
  ck_assert_int_eq(gdn_synth_generate(&fx.inputs, &shape, &so, &e), 0);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&fx.chgate, &shape, 7, &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.recurrence, "kda", &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.source, "synthetic", &e), 0);
  fx.chunk_size = 64;
  ck_assert_msg(fix_synth_kernel_output(&fx, 1, &e) == 0, "%s", e.msg);
  ck_assert_msg(fix_synth_kernel_output(&fx, 8, &e) == 0, "%s", e.msg);
  ck_assert_msg(fix_write(&fx, p, &e) == 0, "%s", e.msg);
  fix_fixture_clear(&fx);
}

static cli_result *fixture_run(const char *const *args) {
  static cli_result r;
  char *av[16] = {(char *)exe_fixture};
  for (int i = 0; args[i]; i++) av[i + 1] = (char *)args[i];
  cli_run(&r, av);
  return &r;
}

static void regen_dd(const char *p) {
  const char *av[] = {"regen", p, "--oracle", "dd", NULL};
  cli_result *r = fixture_run(av);
  ck_assert_msg(r->status == 0 && strstr(r->out, "tier dd"), "regen --oracle dd: %d %s %s", r->status, r->out,
                r->err);
}

static json_t *check_doc(const char *p, int want, gdn_error *e) {
  const char *j = scratch_case_path("c.json");
  char *av[] = {"gdn-parity", "check", (char *)p, "--json", (char *)j, "--reproducible", NULL};
  const int rc = cli_inproc(av, e);
  ck_assert_msg(rc == want, "check exit %d (want %d): %s", rc, want, e->msg);
  if (rc < 0) return NULL;
  json_error_t je;
  json_t *d = json_load_file(j, 0, &je);
  ck_assert_msg(d != NULL, "%s", je.text);
  return d;
}

static json_t *oracle_of(json_t *d) { return json_object_get(d, "oracle"); }

static double case_err(json_t *d, size_t i, const char *t) {
  return json_real_value(json_object_get(json_object_get(json_array_get(json_object_get(d, "cases"), i), t), "err"));
}

START_TEST(stored_dd_oracle_is_the_tier_and_trusted) {
  const char *p = scratch_case_path("k.h5");
  write_kda(p);
  gdn_error e;
  gdn_error_init(&e);
  json_t *fly = check_doc(p, 0, &e); /* the MPFR reference, on the fly */
  regen_dd(p);
  fix_fixture fx;
  fix_fixture_init(&fx);
  ck_assert_msg(fix_kda_load(&fx, p, 0, &e) == 0, "%s", e.msg);
  const fix_oracle *so = &fx.oracle;
  ck_assert(so->present && so->fresh && so->problem_fresh == 1 && so->tier_dd);
  ck_assert_int_eq(so->precision_bits, 106);
  ck_assert_int_eq(so->check_bits, 128);
  ck_assert_int_eq(so->guaranteed_bits, 0); /* the KDA dd tier computes no running bound */
  ck_assert_int_eq(so->sampled_columns, shape.B * shape.Hv * 2);
  /* the dd tier's values, bit for bit, and its certificate */
  oracle_dd_config dc;
  oracle_dd_config_init(&dc);
  gdn_outputs dd;
  gdn_outputs_init(&dd);
  oracle_dd_certificate cert;
  ck_assert_msg(oracle_kda_run_dd(&fx.inputs, &fx.chgate, &dc, &dd, &cert, &e) == 0, "%s", e.msg);
  ck_assert(!memcmp(dd.o, so->out.o, gdn_shape_numel_v(&shape) * sizeof *dd.o));
  ck_assert(!memcmp(dd.ht, so->out.ht, gdn_shape_numel_state(&shape) * sizeof *dd.ht));
  ck_assert_int_eq(so->certified_bits, cert.certified_bits);
  ck_assert_int_eq(so->normwise_bits, cert.normwise_bits);
  ck_assert_int_ge(so->certified_bits, 80);
  gdn_outputs_clear(&dd);
  fix_fixture_clear(&fx);
  /* check trusts it: tier dd, the stored certificate, the spot check, PASS */
  json_t *st = check_doc(p, 0, &e), *o = oracle_of(st);
  ck_assert(json_is_true(json_object_get(o, "from_fixture")));
  ck_assert_str_eq(json_string_value(json_object_get(o, "tier")), "dd");
  ck_assert_int_eq(json_integer_value(json_object_get(o, "precision_bits")), 106);
  ck_assert_int_eq(json_integer_value(json_object_get(o, "check_bits")), 128);
  ck_assert_int_eq(json_integer_value(json_object_get(o, "sampled_columns")), 4);
  ck_assert_int_eq(json_integer_value(json_object_get(o, "guaranteed_bits")), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(o, "certified_bits")), cert.certified_bits);
  ck_assert_msg(json_real_value(json_object_get(json_object_get(o, "spot_check"), "rel")) <= 0x1p-40, "spot");
  ck_assert(json_is_true(json_object_get(st, "pass")));
  const size_t n = json_array_size(json_object_get(st, "cases"));
  ck_assert_int_eq(n, 8); /* token, chunked, affine at 1, 2, 4, 8, the two outputs */
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 2; k++) {
      const char *t = k ? "ht" : "o";
      const double a = case_err(fly, i, t), b = case_err(st, i, t);
      ck_assert_msg(fabs(a - b) <= 1e-9 * a, "case %zu %s: mpfr %.17g dd %.17g", i, t, a, b);
    }
  json_decref(fly);
  json_decref(st);
}
END_TEST

/* dd_certificate rewritten as four integers, one of them v at index i. */
static void set_cert(const char *p, int i, long long v) {
  long long c[4] = {128, 90, 0, 4};
  c[i] = v;
  hid_t f = h5e_open_rw(p), g = H5Gopen2(f, "/oracle", H5P_DEFAULT);
  ck_assert_int_ge(H5Adelete(g, "dd_certificate"), 0);
  const hsize_t four = 4;
  hid_t s = H5Screate_simple(1, &four, NULL), a = H5Acreate2(g, "dd_certificate", H5T_STD_I64LE, s, H5P_DEFAULT,
                                                             H5P_DEFAULT);
  ck_assert_int_ge(H5Awrite(a, H5T_NATIVE_LLONG, c), 0);
  H5Aclose(a);
  H5Sclose(s);
  H5Gclose(g);
  H5Fclose(f);
}

static void delete_attr(const char *p, const char *name) {
  hid_t f = h5e_open_rw(p), g = H5Gopen2(f, "/oracle", H5P_DEFAULT);
  ck_assert_int_ge(H5Adelete(g, name), 0);
  H5Gclose(g);
  H5Fclose(f);
}

START_TEST(tampered_certificate_and_planted_value) {
  const char *p = scratch_case_path("k.h5");
  gdn_error e;
  gdn_error_init(&e);
  write_kda(p);
  regen_dd(p);
  set_cert(p, 3, 1000); /* sampled_columns over B Hv Dv = 32 */
  check_doc(p, -1, &e);
  ck_assert_int_eq(e.code, GDN_ERR_INPUT); /* exit 2 */
  ck_assert_msg(strstr(e.msg, "/oracle: dd_certificate sampled_columns = 1000 is outside [1, 32]"), "%s", e.msg);
  set_cert(p, 0, 3); /* check_bits 3 */
  check_doc(p, -1, &e);
  ck_assert_int_eq(e.code, GDN_ERR_INPUT); /* exit 2 */
  ck_assert_msg(strstr(e.msg, "dd_certificate check_bits = 3 is outside"), "%s", e.msg);
  delete_attr(p, "dd_certificate");
  check_doc(p, -1, &e);
  ck_assert_int_eq(e.code, GDN_ERR_INPUT); /* exit 2 */
  ck_assert_msg(strstr(e.msg, "attribute dd_certificate is missing (required with tier \"dd\")"), "%s", e.msg);
  /* (regen --force refuses such a file too: its reader is check's) */
  const char *force[] = {"regen", p, "--oracle", "dd", "--force", NULL};
  ck_assert_int_eq(fixture_run(force)->status, 2);
  write_kda(p);
  regen_dd(p);
  h5e_set_attr_int(p, "/oracle", "precision_bits", 128, 1);
  check_doc(p, -1, &e);
  ck_assert_int_eq(e.code, GDN_ERR_INPUT); /* exit 2 */
  ck_assert_msg(strstr(e.msg, "precision_bits 128 with tier \"dd\" (the tier's is 106)"), "%s", e.msg);
  /* a value planted in a spot-checked column (2, 6, 10, 14 of 16): not trusted, recomputed */
  write_kda(p);
  regen_dd(p);
  h5e_poke(p, "/oracle/o", ((0 * 96 + 40) * 2 + 1) * 16 + 10, 0.75f);
  json_t *d = check_doc(p, 0, &e), *o = oracle_of(d);
  ck_assert(json_is_false(json_object_get(o, "from_fixture")));
  ck_assert_str_eq(json_string_value(json_object_get(o, "tier")), "mpfr");
  ck_assert_msg(strstr(json_string_value(json_object_get(o, "note")), "spot check failed"), "%s",
                json_string_value(json_object_get(o, "note")));
  json_decref(d);
}
END_TEST

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_kda_regen_dd GDN_FIXTURE\n");
    return 2;
  }
  exe_fixture = argv[1];
  Suite *s = suite_create("kda_regen_dd");
  TCase *tc = tcase_create("kda_regen_dd");
  tcase_add_checked_fixture(tc, scratch_case_setup, scratch_case_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, stored_dd_oracle_is_the_tier_and_trusted);
  tcase_add_test(tc, tampered_certificate_and_planted_value);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  const int nf = srunner_ntests_failed(r);
  srunner_free(r);
  return nf ? 1 : 0;
}
