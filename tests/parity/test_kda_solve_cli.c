/* gdn-parity --recurrence kda --solve xla-expander (kern_solve_xla.h): the
 * forward (token loop, chunked, affine-prefix on 2 devices) and --grad PASS
 * against the oracle at a small shape, the JSON names the solve; against
 * the same run by substitution the chunked cases' errors move (the option
 * reaches the kernels) and the token loop's do not (it has no solve); the
 * gate-value-axis mutant FAILs under the expander (negative control); the
 * summary line names the solve; an unknown solve is refused, naming it. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "../scratch_dir.h"
#include "cli_inproc.h"

/* --solve NAME (NULL: the default) at 1,64,2,16 (one key head, h0, C = 32,
 * D = 1 and 2); the document, or NULL when grad fails to load. */
static json_t *run(const char *dir, const char *solve, int grad) {
  char *js = scratch_join(dir, solve ? "x.json" : "s.json");
  char *av[24] = {"gdn-parity", "--shape", "1,64,2,16", "--key-heads", "1", "--recurrence", "kda", "--devices", "1,2",
                  "--chunk", "32", "--h0", "--quiet", "--json", js};
  int n = 15;
  if (solve) av[n++] = "--solve", av[n++] = (char *)solve;
  if (grad) av[n++] = "--grad";
  av[n] = NULL;
  gdn_error e;
  ck_assert_msg(cli_inproc(av, &e) == 0, "--solve %s: %s", solve ? solve : "(default)", e.msg);
  json_error_t je;
  json_t *d = json_load_file(js, 0, &je);
  ck_assert_ptr_nonnull(d);
  return d;
}

static double o_err(json_t *d, size_t i) {
  return json_real_value(json_object_get(json_object_get(json_array_get(json_object_get(d, "cases"), i), "o"), "err"));
}

START_TEST(test_expander_passes) {
  char *dir = scratch_mkdtemp("/tmp/kda-solve");
  json_t *x = run(dir, "xla-expander", 1), *s = run(dir, NULL, 0);
  ck_assert(json_is_true(json_object_get(x, "pass")));
  ck_assert_str_eq(json_string_value(json_object_get(x, "solve")), "xla-expander");
  ck_assert_str_eq(json_string_value(json_object_get(s, "solve")), "substitution");
  /* cases, forward and backward: the token loop, the chunked kernel, the affine-prefix at D = 1, 2 */
  json_t *g = json_object_get(x, "grad");
  ck_assert(json_is_true(json_object_get(g, "pass")));
  ck_assert_int_eq(json_array_size(json_object_get(g, "cases")), 4);
  const size_t nc = json_array_size(json_object_get(x, "cases"));
  ck_assert_uint_eq(nc, 4);
  ck_assert_uint_eq(json_array_size(json_object_get(s, "cases")), nc);
  ck_assert(o_err(x, 0) == o_err(s, 0)); /* the token loop: no solve */
  for (size_t i = 1; i < nc; i++) /* float32: the expander's bits are not the substitution's */
    ck_assert_msg(o_err(x, i) != o_err(s, i), "case %zu: the same error under both solves", i);
  json_decref(x), json_decref(s);
  char *mu[] = {"gdn-parity", "--shape", "1,64,2,16", "--key-heads", "1", "--recurrence", "kda", "--devices", "2",
                "--chunk", "32", "--solve", "xla-expander", "--mutant", "gate-value-axis", "--quiet", NULL};
  gdn_error e;
  ck_assert_msg(cli_inproc(mu, &e) == 1, "the mutant passed under the expander");
  /* the summary line names a solve other than the default */
  char *sm[] = {"gdn-parity", "--shape", "1,32,1,4", "--recurrence", "kda", "--devices", "1", "--solve",
                "xla-expander", "--quiet", NULL};
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  gdn_error_init(&e);
  ck_assert_int_eq(parity_cli_main(10, sm, out, out, &e), 0);
  fclose(out);
  ck_assert_msg(strstr(text, "PASS: 3 cases, 0 failed (recurrence kda, solve xla-expander)\n"), "%s", text);
  free(text);
  scratch_rmdir(dir);
  free(dir);
}
END_TEST

START_TEST(test_unknown_solve) {
  char *av[] = {"gdn-parity", "--shape", "1,32,1,4", "--recurrence", "kda", "--solve", "lapack", NULL};
  gdn_error e;
  ck_assert_int_eq(cli_inproc(av, &e), -1);
  ck_assert_int_eq(e.code, GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "--solve 'lapack'"), "%s", e.msg);
}
END_TEST

CKR_MAIN("parity", "kda_solve_cli", 120, test_expander_passes, test_unknown_solve)
