/* The gate itself: it fails what it must fail and passes what it must pass.
 *   - a deliberately broken composition order (swapped operands) fails;
 *   - every shipped fixture replays clean (the CI gate);
 *   - an external output with a planted error fails, the same output
 *     without it passes.
 * argv[1]: the folder of shipped fixtures. */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fix.h"
#include "gdn_synth.h"
#include "parity_cli.h"
#include "parity_sweep.h"
#include "report.h"
#include "../check_runner.h"
#include "cli_inproc.h"
#include "synth_fixture.h"
#include "sweep_setup.h"

static char *data_dir;

static int sweep_once(int broken, int64_t devices, parity_doc *d) {
  gdn_error e;
  gdn_error_init(&e);
  parity_policy pol;
  parity_policy_init(&pol);
  ck_assert_int_eq(parity_policy_load_builtin(&pol, &e), GDN_OK);
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_shape s = {1, 512, 1, 2, 32, 32};
  gdn_synth_opts so = {3, GDN_SYNTH_SLOW_GATES | GDN_SYNTH_H0, 0};
  ck_assert_int_eq(gdn_synth_generate(&in, &s, &so, &e), GDN_OK);
  parity_reference ref;
  parity_reference_init(&ref);
  ck_assert_int_eq(parity_reference_compute(&ref, &in, PARITY_ORACLE_MPFR, 128, &e), GDN_OK);
  parity_sweep_opts o;
  sws_opts(&o, &pol, devices);
  o.chunks[0] = 32;
  o.mutant = broken ? KERN_MUTANT_COMPOSE_ORDER : KERN_MUTANT_NONE;
  /* D = 3 does not divide T = 512: array_split; D = 8: token sharding */
  o.shard = s.T % devices ? KERN_SHARD_CHUNKS : KERN_SHARD_TOKENS;
  sws_run(d, &in, &ref, NULL, 0, &o);
  int pass = parity_doc_pass(d);
  parity_reference_clear(&ref);
  gdn_inputs_clear(&in);
  parity_policy_clear(&pol);
  return pass;
}

/* Swapped operands in (A2, B2) o (A1, B1) give a wrong incoming state at
 * every seam; with slow gates that state carries, and the gate must fail. */
START_TEST(broken_composition_fails_the_gate) {
  for (int64_t D = 3; D <= 8; D += 5) {
    parity_doc good, bad;
    ck_assert_msg(sweep_once(0, D, &good), "correct composition must pass (D = %ld)", (long)D);
    ck_assert_msg(!sweep_once(1, D, &bad), "broken composition must fail (D = %ld)", (long)D);
    json_t *c = json_array_get(json_object_get(bad.root, "cases"), 0);
    json_t *tol = json_object_get(c, "tolerance");
    json_t *dec = json_array_get(json_object_get(tol, "checks"), json_integer_value(json_object_get(tol, "deciding")));
    ck_assert(json_is_false(json_object_get(dec, "pass")));
    ck_assert_str_eq(json_string_value(json_object_get(dec, "subject")), "affine-prefix");
    /* Far outside round-off: the factor reached is large. */
    ck_assert(json_real_value(json_object_get(dec, "factor_reached")) > 10);
    parity_doc_clear(&good);
    parity_doc_clear(&bad);
  }
}
END_TEST

/* stdout of the last run_cli (its verdict line is the last line) */
static char cli_stdout[1 << 16];

static int run_cli(int argc, char **argv, json_t **doc, const char *json_path) {
  ck_assert_ptr_null(argv[argc]);
  gdn_error e;
  gdn_error_init(&e);
  FILE *devnull = fopen("/dev/null", "w"), *out = tmpfile();
  ck_assert(devnull && out);
  int st = parity_cli_main(argc, argv, out, devnull, &e);
  rewind(out);
  cli_stdout[fread(cli_stdout, 1, sizeof cli_stdout - 1, out)] = '\0';
  fclose(out);
  fclose(devnull);
  if (st < 0) {
    fprintf(stderr, "gdn-parity failed: %s\n", e.msg);
    return -1;
  }
  if (doc) {
    gdn_error_init(&e);
    ck_assert_msg(report_json_read(json_path, doc, &e) == GDN_OK, "%s", e.msg);
  }
  return st;
}

/* The CI gate: every shipped fixture, its stored oracle, our kernels. */
START_TEST(shipped_fixtures_replay_clean) {
  DIR *d = opendir(data_dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *de;
  int n = 0;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 4 || strcmp(de->d_name + l - 3, ".h5")) continue;
    char path[1024], js[] = "/tmp/gdn-gate-XXXXXX.json";
    snprintf(path, sizeof path, "%s/%s", data_dir, de->d_name);
    int fd = mkstemps(js, 5);
    close(fd);
    char *av[] = {"gdn-parity", "check", "--fixture", path, "--devices", "1", "--json", js,
                  "--reproducible", NULL};
    fix_fixture fx;
    sfx_load(&fx, path);
    gdn_error e;
    gdn_error_init(&e);
    /* 1 and up to two more device counts that divide T (--shard tokens) */
    const int64_t T = fx.inputs.shape.T;
    fix_fixture_clear(&fx);
    char devs[32] = "1";
    for (int D = 2, k = 0; D <= 7 && k < 2; D++)
      if (T % D == 0) k++, snprintf(devs + strlen(devs), sizeof devs - strlen(devs), ",%d", D);
    av[5] = devs;
    json_t *doc = NULL;
    int st = run_cli(9, av, &doc, js);
    ck_assert_msg(st == 0, "%s: gate status %d", path, st);
    json_t *in0 = json_array_get(json_object_get(doc, "inputs"), 0);
    ck_assert(json_is_true(json_object_get(in0, "oracle_from_fixture")));
    ck_assert_int_eq(strlen(json_string_value(json_object_get(in0, "sha256"))), 64);
    json_decref(doc);
    unlink(js);
    n++;
  }
  closedir(d);
  ck_assert_msg(n >= 5, "only %d fixtures found in %s", n, data_dir);
}
END_TEST

/* An upstream output = the oracle rounded to float32: passes.  The same with
 * one element off by 1e-3 relative: fails, and the case names it.  The clean
 * output without a final state (MaxText returns one only when an initial
 * state is given; planted == 2): passes, judged on o alone, and its verdict
 * says so, in the document and in the verdict line ("ht NOT JUDGED for
 * tpu_scan"); the output with ht carries neither (the control). */
START_TEST(planted_error_in_external_output_fails) {
  char src[1024];
  snprintf(src, sizeof src, "%s/small-b2-t100-hk2-hv4-d32-h0.h5", data_dir);
  for (int planted = 0; planted <= 2; planted++) {
    fix_fixture fx;
    sfx_load(&fx, src);
    gdn_error e;
    gdn_error_init(&e);
    ck_assert(fx.oracle.present && fx.oracle.fresh);
    fix_output *slot;
    ck_assert_int_eq(fix_fixture_add_output(&fx, "tpu_scan", &slot, &e), GDN_OK);
    ck_assert_int_eq(gdn_outputs_alloc(&slot->out, &fx.inputs.shape, GDN_DTYPE_F32, &e), GDN_OK);
    size_t no = gdn_shape_numel_v(&fx.inputs.shape), nh = gdn_shape_numel_state(&fx.inputs.shape);
    for (size_t i = 0; i < no; i++) slot->out.o[i] = (float)fx.oracle.out.o[i];
    for (size_t i = 0; i < nh; i++) slot->out.ht[i] = (float)fx.oracle.out.ht[i];
    slot->has_ht = planted != 2;
    if (planted == 1) {
      /* 3e-2 times the largest |o| at one element: rel_fro ~ 3e-2 / sqrt(n) ~ 2e-4 >> band. */
      double mx = 0;
      for (size_t i = 0; i < no; i++) mx = fmax(mx, fabs(fx.oracle.out.o[i]));
      slot->out.o[no / 3] = (float)(slot->out.o[no / 3] + 3e-2 * mx);
    }
    sfx_output_attrs(slot, "scan", NULL, 1);
    char path[] = "/tmp/gdn-planted-XXXXXX.h5", js[] = "/tmp/gdn-planted-XXXXXX.json";
    close(mkstemps(path, 3));
    close(mkstemps(js, 5));
    ck_assert_msg(fix_write(&fx, path, &e) == GDN_OK, "%s", e.msg);
    fix_fixture_clear(&fx);
    char *av[] = {"gdn-parity", "check", "--fixture", path, "--devices", "1,2", "--json", js,
                  "--reproducible", NULL};
    json_t *doc = NULL;
    int st = run_cli(9, av, &doc, js);
    json_t *c = json_array_get(json_object_get(doc, "cases"), 0);
    json_t *ext = json_object_get(json_object_get(c, "impls"), "tpu_scan");
    ck_assert_ptr_nonnull(ext);
    if (planted == 1) {
      ck_assert_int_eq(st, 1);
      ck_assert(json_is_false(json_object_get(ext, "pass")));
      ck_assert(json_is_false(json_object_get(c, "pass")));
      /* the worst position is the planted one */
      json_t *w = json_object_get(json_object_get(ext, "o"), "worst");
      size_t idx = (size_t)(((json_integer_value(json_object_get(w, "b")) * 100 +
                              json_integer_value(json_object_get(w, "t"))) * 4 +
                             json_integer_value(json_object_get(w, "h"))) * 32 +
                            json_integer_value(json_object_get(w, "d")));
      ck_assert_uint_eq(idx, gdn_shape_numel_v(&(gdn_shape){2, 100, 2, 4, 32, 32}) / 3);
    } else {
      ck_assert_msg(st == 0, "the oracle rounded to float32 must pass (status %d)", st);
      ck_assert(json_is_true(json_object_get(ext, "pass")));
      ck_assert((json_object_get(ext, "judged_on") != NULL) == (planted == 2));
      ck_assert((json_object_get(ext, "ht") == NULL) == (planted == 2));
      /* the verdict line itself says ht was not judged, and only then */
      const char *line = strstr(cli_stdout, "PASS: ");
      ck_assert_msg(line, "no verdict line in:\n%s", cli_stdout);
      const int says = strstr(line, "ht NOT JUDGED for tpu_scan: no final state returned") != NULL;
      ck_assert_msg(says == (planted == 2), "planted %d, verdict line: %s", planted, line);
    }
    json_decref(doc);
    unlink(path);
    unlink(js);
  }
}
END_TEST

CKR_MAIN_ARGS("test_gate FIXTURE-DATA-DIR", 1, (&data_dir), "gate", "gate", 300, broken_composition_fails_the_gate,
    shipped_fixtures_replay_clean, planted_error_in_external_output_fails)
