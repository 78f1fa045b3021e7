/* gdn-parity check of a KDA fixture with /cotangents and stored gradients:
 * our float32 token loop's backward (kern_kda_recurrent_vjp) stored as
 * /outputs/tpu_scan/grads passes against the KDA VJP oracle with its
 * numbers; one planted dg element fails, naming dg and the element; a dg of
 * GDN's rank, a missing gradient, gradients without /cotangents and a
 * cotangent of the wrong shape are refused (exit 2) naming the array and
 * the shapes.  Small shapes: about a second in all. */
#include <check.h>
#include <hdf5.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/h5_edit.h"
#include "cli_inproc.h"
#include "fix_string.h"
#include "fix_write.h"
#include "gdn_chgate.h"
#include "gdn_chgrads.h"
#include "gdn_synth.h"
#include "kern_kda.h"
#include "kern_kda_vjp.h"

static char dir[64], path[128], json[128];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/test_kda_check_grads.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/k.h5", dir);
  snprintf(json, sizeof json, "%s/k.json", dir);
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

static const gdn_shape shape = {1, 64, 1, 2, 16, 16}; /* B T Hk Hv Dk Dv: GVA, two value heads a key head */

/* A float64 array written as a float32 dataset (values rounded). */
static void put(hid_t loc, const char *name, const double *x, int rank, const hsize_t *dims) {
  size_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  float *f = malloc(n * sizeof *f);
  for (size_t i = 0; i < n; i++) f[i] = (float)x[i];
  hid_t sp = H5Screate_simple(rank, dims, NULL), d = H5Dcreate2(loc, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT,
                                                                   H5P_DEFAULT, H5P_DEFAULT);
  ck_assert_int_ge(d, 0);
  ck_assert_int_ge(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, f), 0);
  H5Dclose(d);
  H5Sclose(sp);
  free(f);
}

static void put_f32(hid_t loc, const char *name, const float *x, int rank, const hsize_t *dims) {
  size_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  double *d = malloc(n * sizeof *d);
  for (size_t i = 0; i < n; i++) d[i] = x[i];
  put(loc, name, d, rank, dims);
  free(d);
}

/* The KDA fixture (synth's inputs with h0, Kimi's gate), our token loop's
 * o and ht as /outputs/tpu_scan, the cotangents drawn from seed 5 (do and
 * dht) and the token loop's backward as its gradients; `dg_rank3`: dg
 * summed over channels (GDN's shape), `skip`: a gradient left out (NULL:
 * none), `no_cot`: no /cotangents. */
static void write_fixture(int dg_rank3, const char *skip, int no_cot) {
  gdn_error e;
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_synth_opts so = {3, GDN_SYNTH_H0, 0};
  ck_assert_int_eq(gdn_synth_generate(&fx.inputs, &shape, &so, &e), 0);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&fx.chgate, &shape, 3, &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.recurrence, "kda", &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.source, "tpu-dump", &e), 0);
  fx.chunk_size = 64;
  unlink(path);
  fix_output *o;
  ck_assert_int_eq(fix_fixture_add_output(&fx, "tpu_scan", &o, &e), 0);
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.matmul = KERN_MATMUL_IEEE;
  ck_assert_msg(kern_kda_recurrent(&fx.inputs, &fx.chgate, &cfg, KERN_KDA_MUTANT_NONE, &o->out, &e) == 0, "%s", e.msg);
  o->has_ht = 1;
  o->devices = 1;
  ck_assert_int_eq(fix_set_string(&o->implementation, "scan", &e), 0);
  ck_assert_msg(fix_write(&fx, path, &e) == 0, "%s", e.msg);
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  ck_assert_int_eq(gdn_cotangents_alloc(&ct, &shape, 1, &e), 0);
  gdn_cotangents_synth(&ct, 5);
  gdn_grads g;
  gdn_grads_init(&g);
  ck_assert_msg(kern_kda_recurrent_vjp(&fx.inputs, &fx.chgate, &ct, &cfg, KERN_KDA_VJP_MUTANT_NONE, &g, &e) == 0, "%s",
                e.msg);
  const hsize_t B = 1, T = 64, Hk = 1, Hv = 2, Dk = 16, Dv = 16;
  const hsize_t dv[4] = {B, T, Hv, Dv}, st[4] = {B, Hv, Dk, Dv}, qk[4] = {B, T, Hk, Dk}, ch[4] = {B, T, Hv, Dk};
  hid_t f = h5e_open_rw(path);
  const int64_t v3 = 3; /* cotangents and gradients are schema version 3's */
  hid_t va = H5Aopen(f, "gdn_fixture_version", H5P_DEFAULT);
  ck_assert_int_ge(H5Awrite(va, H5T_NATIVE_INT64, &v3), 0);
  H5Aclose(va);
  if (!no_cot) {
    hid_t c = H5Gcreate2(f, "cotangents", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    put_f32(c, "do", ct.d_o, 4, dv);
    put_f32(c, "dht", ct.dht, 4, st);
    H5Gclose(c);
  }
  hid_t gr = H5Gcreate2(f, "/outputs/tpu_scan/grads", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ck_assert_int_ge(gr, 0);
  const hsize_t *dims[GDN_GRADS_N] = {qk, qk, dv, ch, ch, st};
  double *dg3 = calloc(B * T * Hv, sizeof *dg3);
  for (size_t i = 0; i < B * T * Hv; i++)
    for (size_t c = 0; c < Dk; c++) dg3[i] += g.dg[i * Dk + c];
  for (int id = 0; id < GDN_GRADS_N; id++) {
    const char *nm = gdn_grads_name((gdn_grad_id)id);
    if (skip && !strcmp(skip, nm)) continue;
    if (id == GDN_GRAD_DG && dg_rank3)
      put(gr, nm, dg3, 3, ch);
    else
      put(gr, nm, gdn_grads_tensor_c(&g, (gdn_grad_id)id), id == GDN_GRAD_DBETA ? 3 : 4, dims[id]);
  }
  free(dg3);
  H5Gclose(gr);
  H5Fclose(f);
  gdn_grads_clear(&g);
  gdn_cotangents_clear(&ct);
  fix_fixture_clear(&fx);
}

static int check(gdn_error *e) {
  char *av[] = {"gdn-parity", "check", path, "--json", json, "--devices", "1,2", "--reproducible", NULL};
  return cli_inproc(av, e);
}

static json_t *grad_case(json_t **doc) {
  json_error_t je;
  *doc = json_load_file(json, 0, &je);
  ck_assert_msg(*doc != NULL, "%s", je.text);
  json_t *g = json_object_get(*doc, "grad");
  ck_assert_int_eq(json_integer_value(json_object_get(g, "n_cases")), 1);
  json_t *c = json_array_get(json_object_get(g, "cases"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(c, "subject")), "output:tpu_scan");
  return c;
}

static double err_of(json_t *c, const char *nm) {
  return json_real_value(json_object_get(json_object_get(c, nm), "err"));
}

START_TEST(stored_grads_pass_with_numbers) {
  write_fixture(0, NULL, 0);
  gdn_error e;
  ck_assert_msg(check(&e) == 0, "%s", e.msg);
  json_t *doc, *c = grad_case(&doc);
  /* token, chunk 64, affine at 1 and 2, the output's forward, its backward */
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "n_cases")), 6);
  ck_assert(json_is_true(json_object_get(doc, "pass")));
  json_t *g = json_object_get(doc, "grad");
  ck_assert(json_is_true(json_object_get(json_object_get(g, "cotangents"), "dht")));
  ck_assert_int_ge(json_integer_value(json_object_get(json_object_get(g, "oracle"), "certified_bits")), 100);
  const double band = json_real_value(json_object_get(c, "band"));
  /* the band is the forward's for the case: u (8 kappa_G + 64) */
  ck_assert_msg(band >= 64 * 0x1p-24 && band < 1e-3, "band %g", band);
  /* measured: dq 2.4e-7, dk 2.1e-7, dv 1.8e-7, dg 2.4e-7, dbeta 2.5e-7, dh0 4.4e-7 (at most 7.4 u), band 2.7e-5 */
  static const char *const nm[] = {"dq", "dk", "dv", "dg", "dbeta", "dh0"};
  for (int i = 0; i < 6; i++) {
    const double x = err_of(c, nm[i]);
    ck_assert_msg(x > 0 && x < 16 * 0x1p-24 && x < band, "%s err %g (band %g)", nm[i], x, band);
  }
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_object_get(c, "dg"), "worst"), "dk")) >= 0,
                   1);
  ck_assert_int_eq(json_array_size(json_object_get(c, "failed")), 0);
  json_decref(doc);
}
END_TEST

START_TEST(planted_dg_fails_named) {
  write_fixture(0, NULL, 0);
  /* dg[b=0, t=41, h=1, dk=7] moved by 10 x the largest |dg| */
  json_t *doc;
  gdn_error e;
  ck_assert_int_eq(check(&e), 0);
  json_t *c = grad_case(&doc);
  const double ref = json_real_value(json_object_get(json_object_get(c, "dg"), "max_ref"));
  json_decref(doc);
  const hsize_t flat = ((0 * 64 + 41) * 2 + 1) * 16 + 7;
  h5e_poke(path, "/outputs/tpu_scan/grads/dg", flat, (float)(10 * ref));
  ck_assert_int_eq(check(&e), 1);
  c = grad_case(&doc);
  ck_assert(json_is_false(json_object_get(c, "pass")));
  json_t *failed = json_object_get(c, "failed");
  ck_assert_int_eq(json_array_size(failed), 1);
  ck_assert_str_eq(json_string_value(json_array_get(failed, 0)), "dg");
  json_t *w = json_object_get(json_object_get(c, "dg"), "worst");
  ck_assert_int_eq(json_integer_value(json_object_get(w, "t")), 41);
  ck_assert_int_eq(json_integer_value(json_object_get(w, "h")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(w, "dk")), 7);
  ck_assert_msg(err_of(c, "dg") > 5, "dg err %g", err_of(c, "dg"));
  ck_assert_msg(err_of(c, "dq") < 16 * 0x1p-24, "dq err %g", err_of(c, "dq")); /* the others still pass */
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "n_failed")), 1);
  ck_assert(json_is_true(json_object_get(json_array_get(json_object_get(doc, "cases"), 0), "pass")));
  json_decref(doc);
}
END_TEST

START_TEST(malformed_grads_refused_by_name) {
  gdn_error e;
  write_fixture(1, NULL, 0);
  ck_assert_int_eq(check(&e), -1);
  ck_assert_msg(strstr(e.msg, "/outputs/tpu_scan/grads/dg: shape (1, 64, 2), expected (B, T, Hv, Dk) = (1, 64, 2, 16)") &&
                    strstr(e.msg, "per channel"),
                "%s", e.msg);
  write_fixture(0, "dv", 0);
  ck_assert_int_eq(check(&e), -1);
  ck_assert_msg(strstr(e.msg, "/outputs/tpu_scan/grads/dv: missing"), "%s", e.msg);
  write_fixture(0, NULL, 1);
  ck_assert_int_eq(check(&e), -1);
  ck_assert_msg(strstr(e.msg, "/outputs/tpu_scan/grads without /cotangents"), "%s", e.msg);
  /* a do of the wrong shape */
  write_fixture(0, NULL, 0);
  hid_t f = h5e_open_rw(path);
  ck_assert_int_ge(H5Ldelete(f, "/cotangents/do", H5P_DEFAULT), 0);
  const hsize_t d[4] = {1, 64, 2, 8};
  double *z = calloc(1024, sizeof *z);
  hid_t c = H5Gopen2(f, "cotangents", H5P_DEFAULT);
  put(c, "do", z, 4, d);
  free(z);
  H5Gclose(c);
  H5Fclose(f);
  ck_assert_int_eq(check(&e), -1);
  ck_assert_msg(strstr(e.msg, "/cotangents/do: shape (1, 64, 2, 8), expected (B, T, Hv, Dv) = (1, 64, 2, 16)"), "%s",
                e.msg);
}
END_TEST

int main(void) {
  Suite *s = suite_create("kda_check_grads");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, stored_grads_pass_with_numbers);
  tcase_add_test(tc, planted_dg_fails_named);
  tcase_add_test(tc, malformed_grads_refused_by_name);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? 1 : 0;
}
