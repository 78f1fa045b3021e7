/* `gdn-parity check` on a fixture with the layer's bfloat16 prelude
 * (schema v3): the round trip synth -> write -> check passes (the inputs
 * entry carries the hash that covers the prelude); negative control: the
 * same file with one bfloat16 ulp added to /inputs/v is refused before any
 * case runs, naming the tensor and the index;
 *   - a synthetic --prelude bfloat16 run counts the prelude's tensors in
 *     --max-bytes (9608 bytes at 1,48,1,16: refused at 9000; control: the
 *     same limit without --prelude fails on the rest of the budget, not on
 *     the prelude). */
#include <check.h>
#include <hdf5.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fix.h"
#include "gdn_prelude.h"
#include "gdn_synth.h"
#include "parity_cli.h"
#include "report.h"
#include "../check_runner.h"
#include "synth_fixture.h"
#include "cli_inproc.h"

/* av[0..ac) then NULL: gdn-parity's status, its message in err. */
static int run_args(char **av, int ac, char *err, size_t n) {
  ck_assert_ptr_null(av[ac]);
  gdn_error e;
  int st = cli_inproc(av, &e);
  snprintf(err, n, "%s", e.msg);
  return st;
}

static int run_check(const char *path, const char *js, char *err, size_t n) {
  char *av[] = {"gdn-parity", "check", "--fixture", (char *)path, "--devices", "1,2", "--oracle", "mpfr",
                "--json", (char *)js, "--reproducible", NULL};
  return run_args(av, 11, err, n);
}

START_TEST(round_trip_and_tampered) {
  char path[] = "/tmp/gdn-prelude-XXXXXX.h5", js[] = "/tmp/gdn-prelude-XXXXXX.json", err[1024];
  close(mkstemps(path, 3));
  close(mkstemps(js, 5));
  gdn_error e;
  gdn_error_init(&e);
  const gdn_shape s = {1, 48, 1, 2, 16, 16};
  fix_fixture fx;
  sfx_make(&fx, s, 4, GDN_SYNTH_PRELUDE_BF16 | GDN_SYNTH_H0, 16);
  ck_assert_msg(fix_write(&fx, path, &e) == GDN_OK, "%s", e.msg);
  char h[FIX_SHA256_HEX];
  ck_assert_int_eq(fix_inputs_sha256(&fx.inputs, h, &e), GDN_OK);
  fix_fixture_clear(&fx);
  ck_assert_msg(run_check(path, js, err, sizeof err) == 0, "%s", err);
  json_t *doc = NULL;
  ck_assert_msg(report_json_read(js, &doc, &e) == GDN_OK, "%s", e.msg);
  json_t *in0 = json_array_get(json_object_get(doc, "inputs"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(in0, "sha256")), h);
  json_decref(doc);
  /* negative control: /inputs/v element (0, 3, 1, 2) one bfloat16 ulp up */
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT), d = H5Dopen2(f, "inputs/v", H5P_DEFAULT);
  ck_assert(f >= 0 && d >= 0);
  const size_t n = gdn_shape_numel_v(&s), at = ((3 * 2) + 1) * 16 + 2;
  uint16_t *b = malloc(n * sizeof *b);
  ck_assert_int_ge(H5Dread(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, b), 0);
  b[at]++;
  ck_assert_int_ge(H5Dwrite(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, b), 0);
  free(b);
  H5Dclose(d);
  H5Fclose(f);
  ck_assert_int_lt(run_check(path, js, err, sizeof err), 0);
  ck_assert_msg(strstr(err, "/inputs/v at index (0, 3, 1, 2)") && strstr(err, "bit for bit"), "%s", err);
  unlink(path);
  unlink(js);
}
END_TEST

START_TEST(synthetic_budget_counts_the_prelude) {
  const gdn_shape s = {1, 48, 1, 1, 16, 16};
  ck_assert_uint_eq(gdn_prelude_bytes(&s), 4 * (2 * 48 * 16 + 48 * 16 + 2 * 48 + 2));
  char err[1024];
  char *with[] = {"gdn-parity", "--shape", "1,48,1,16", "--prelude", "bfloat16", "--max-bytes", "9000", NULL};
  ck_assert_int_lt(run_args(with, 7, err, sizeof err), 0);
  ck_assert_msg(strstr(err, "--prelude bfloat16: its tensors need 9608 bytes"), "%s", err);
  char *without[] = {"gdn-parity", "--shape", "1,48,1,16", "--max-bytes", "9000", NULL};
  ck_assert_int_lt(run_args(without, 5, err, sizeof err), 0);
  ck_assert_msg(!strstr(err, "prelude"), "%s", err);
}
END_TEST

CKR_MAIN_FORK(CK_NOFORK, "check_prelude", "check_prelude", 300, round_trip_and_tampered,
    synthetic_budget_counts_the_prelude)
