/* gdn-fixture synth --recurrence kda --grad --kernel-outputs 1,8: the file
 * holds /cotangents (do, dht) and each KDA kernel output's gradients as
 * GDN's synth --grad writes them, dg per channel (B, T, Hv, Dk); those are
 * the kernels' own backwards (kern_kda_chunk_vjp at D = 1,
 * kern_kda_affine_vjp at D = 8) bit for bit, rounded to float32; check
 * judges them against the KDA VJP oracle and PASSes with its numbers.
 * Negative controls: one dg element and one dq element planted (a token of
 * one output each) FAIL naming dg / dq, the output and the element.  GVA
 * with h0, small shape: a few seconds. */
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
#include "gdn_chgrads.h"
#include "kern_kda_chunk_vjp.h"

static char dir[64], path[128], json[128];
static const char *exe_fixture; /* argv[1]: the gdn-fixture program */

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/test_kda_synth_grad.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/g.h5", dir);
  snprintf(json, sizeof json, "%s/g.json", dir);
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* B 1, T 64, Hv 4, Hk 2, Dk = Dv = 16 */
static void synth(void) {
  cli_result r;
  char *av[] = {(char *)exe_fixture, "synth", "--shape", "1,64,4,16", "--key-heads", "2", "--recurrence", "kda",
                "--h0", "--grad", "--kernel-outputs", "1,8", "--seed", "3", "--out", path, "--force", NULL};
  cli_run(&r, av);
  ck_assert_msg(r.status == 0, "synth: %s", r.err);
}

static json_t *check(int want) {
  char *av[] = {"gdn-parity", "check", path, "--json", json, "--reproducible", NULL};
  gdn_error e;
  const int rc = cli_inproc(av, &e);
  ck_assert_msg(rc == want, "check exit %d (want %d): %s", rc, want, e.msg);
  json_error_t je;
  json_t *d = json_load_file(json, 0, &je);
  ck_assert_msg(d != NULL, "%s", je.text);
  return d;
}

static json_t *grad_case(json_t *doc, const char *subject) {
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(json_object_get(doc, "grad"), "cases"), i, c) {
    if (!strcmp(json_string_value(json_object_get(c, "subject")), subject)) return c;
  }
  ck_abort_msg("no gradient case %s", subject);
  return NULL;
}

static double err_of(json_t *c, const char *nm) {
  return json_real_value(json_object_get(json_object_get(c, nm), "err"));
}

static const char *const subj[2] = {"output:kernel-scan", "output:kernel-affine-prefix-d8"};
static const char *const names[GDN_GRADS_N] = {"dq", "dk", "dv", "dg", "dbeta", "dh0"};

START_TEST(synth_grads_are_the_kernels_and_pass) {
  synth();
  gdn_error e;
  fix_fixture fx;
  fix_fixture_init(&fx);
  ck_assert_msg(fix_kda_load(&fx, path, 0, &e) == 0, "%s", e.msg);
  ck_assert(fx.has_cotangents && fx.cot.dht);
  ck_assert_int_eq(fx.version, 3);
  ck_assert_int_eq(fx.n_outputs, 2);
  for (size_t i = 0; i < 2; i++) { /* outputs in name order: affine-prefix-d8, scan */
    const fix_output *o = &fx.outputs[i];
    ck_assert(o->has_grads && o->grads.dg);
    kern_config cfg;
    kern_config_init(&cfg);
    cfg.matmul = KERN_MATMUL_IEEE;
    cfg.chunk = fx.chunk_size;
    cfg.devices = o->devices;
    gdn_grads g;
    gdn_grads_init(&g);
    ck_assert_msg((o->devices == 1 ? kern_kda_chunk_vjp : kern_kda_affine_vjp)(
                      &fx.inputs, &fx.chgate, &fx.cot, &cfg, KERN_KDA_VJP_MUTANT_NONE, &g, &e) == 0,
                  "%s", e.msg);
    for (int id = 0; id < GDN_GRADS_N; id++) {
      const size_t n = gdn_chgrads_numel(&fx.inputs.shape, (gdn_grad_id)id);
      const double *a = gdn_grads_tensor_c(&o->grads, (gdn_grad_id)id), *b = gdn_grads_tensor_c(&g, (gdn_grad_id)id);
      for (size_t k = 0; k < n; k++)
        ck_assert_msg(a[k] == (double)(float)b[k], "%s %s[%zu]: %g vs %g", o->name, names[id], k, a[k], b[k]);
    }
    gdn_grads_clear(&g);
  }
  fix_fixture_clear(&fx);
  /* the stored dg is per channel */
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, "/outputs/kernel-scan/grads/dg", H5P_DEFAULT);
  hid_t sp = H5Dget_space(d);
  hsize_t dims[8];
  ck_assert_int_eq(H5Sget_simple_extent_dims(sp, dims, NULL), 4);
  ck_assert(dims[0] == 1 && dims[1] == 64 && dims[2] == 4 && dims[3] == 16);
  H5Sclose(sp);
  H5Dclose(d);
  H5Fclose(f);
  json_t *doc = check(0);
  ck_assert(json_is_true(json_object_get(doc, "pass")));
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "grad"), "n_cases")), 2);
  for (int i = 0; i < 2; i++) {
    json_t *c = grad_case(doc, subj[i]);
    ck_assert(json_is_true(json_object_get(c, "pass")));
    ck_assert_int_eq(json_integer_value(json_object_get(c, "devices")), i ? 8 : 1);
    for (int id = 0; id < GDN_GRADS_N; id++) { /* float32 backwards: a few 1e-7 normwise (at T 128: 1.6e-7 to 6.6e-7) */
      const double x = err_of(c, names[id]);
      ck_assert_msg(x > 0 && x < 4e-6, "%s %s err %g", subj[i], names[id], x);
    }
  }
  json_decref(doc);
}
END_TEST

/* One element of `name` in output `out` at flat position `flat` moved by
 * 10x the gradient's largest |reference|: FAIL naming it and the element. */
static void plant_and_fail(const char *out, int which, const char *name, hsize_t flat, const char *ax, int64_t at_t,
                           int64_t at_h, int64_t at_last) {
  synth();
  json_t *doc = check(0);
  const double ref = json_real_value(json_object_get(json_object_get(grad_case(doc, subj[which]), name), "max_ref"));
  json_decref(doc);
  char ds[256];
  snprintf(ds, sizeof ds, "/outputs/%s/grads/%s", out, name);
  h5e_poke(path, ds, flat, (float)(10 * ref));
  doc = check(1);
  json_t *c = grad_case(doc, subj[which]), *failed = json_object_get(c, "failed");
  ck_assert(json_is_false(json_object_get(c, "pass")));
  ck_assert_int_eq(json_array_size(failed), 1);
  ck_assert_str_eq(json_string_value(json_array_get(failed, 0)), name);
  json_t *w = json_object_get(json_object_get(c, name), "worst");
  ck_assert_int_eq(json_integer_value(json_object_get(w, "t")), at_t);
  ck_assert_int_eq(json_integer_value(json_object_get(w, "h")), at_h);
  ck_assert_int_eq(json_integer_value(json_object_get(w, ax)), at_last);
  ck_assert_msg(err_of(c, name) > 5, "%s err %g", name, err_of(c, name));
  ck_assert(json_is_true(json_object_get(grad_case(doc, subj[1 - which]), "pass"))); /* the other output */
  ck_assert(json_is_false(json_object_get(doc, "pass")));
  json_decref(doc);
}

START_TEST(planted_dg_fails_named) {
  /* dg[b=0, t=37, h=3, dk=5] of the scan output: (B, T, Hv, Dk) */
  plant_and_fail("kernel-scan", 0, "dg", ((0 * 64 + 37) * 4 + 3) * 16 + 5, "dk", 37, 3, 5);
}
END_TEST

START_TEST(planted_dq_fails_named) {
  /* dq[b=0, t=50, h=1, dk=9] of the 8-device output: (B, T, Hk, Dk) */
  plant_and_fail("kernel-affine-prefix-d8", 1, "dq", ((0 * 64 + 50) * 2 + 1) * 16 + 9, "dk", 50, 1, 9);
}
END_TEST

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_kda_synth_grad GDN_FIXTURE\n");
    return 2;
  }
  exe_fixture = argv[1];
  Suite *s = suite_create("kda_synth_grad");
  TCase *tc = tcase_create("kda_synth_grad");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, synth_grads_are_the_kernels_and_pass);
  tcase_add_test(tc, planted_dg_fails_named);
  tcase_add_test(tc, planted_dq_fails_named);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  const int nf = srunner_ntests_failed(r);
  srunner_free(r);
  return nf ? 1 : 0;
}
