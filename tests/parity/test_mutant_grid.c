/* grids/upstream-pr.json against the mutant catalogue through the CLI
 * (gdn-parity sweep --mutant NAME): the kills the README's table reports.
 * Case 0 (h0, GQA, 4 devices Hillis-Steele, padded shards) and case 1
 * (packed documents, packing = reset) have known killers:
 *   none               no case fails (exit 0): the negative control;
 *   carry-zero         both cases fail (the carried state matters in both);
 *   gqa-tile           case 0 only (case 1 has Hk = Hv: tile = repeat);
 *   reset-missing      case 1 only (case 0 has no documents);
 *   final-from-replay  no case fails: equal in exact arithmetic, ht off by
 *                      round-off only (tests/kernels/test_mutant);
 *   bf16-cast-added    both cases fail (float32 compute: the rounded pairs
 *                      move o by ~6e-4 relative);
 *   bf16-cast-missing  no case fails: it needs bfloat16 compute, and there it
 *                      moves o by less than bfloat16's own rounding points do
 *                      (tests/kernels/test_mutant, bf16_mutants; README);
 * and an unknown name exits 2 naming it and listing the catalogue.
 * --oracle none: the mutant is judged as affine-prefix against the scan,
 * which is what kills it (the oracle only adds the true answer). */
#include <check.h>
#include <jansson.h>

#include "cli_run.h"
#include "../check_runner.h"

static const char *exe, *grid;

static void expect(const char *mutant, int k0, int k1) {
  char json[] = "/tmp/gdn-mutant-XXXXXX";
  int fd = mkstemp(json);
  ck_assert_int_ge(fd, 0);
  close(fd);
  char *argv[] = {(char *)exe, "sweep", "--grid", (char *)grid, "--mutant", (char *)mutant,
                  "--oracle", "none", "--json", json, "--quiet", NULL};
  cli_result r;
  cli_run(&r, argv);
  ck_assert_msg(r.status == ((k0 || k1) ? 1 : 0), "%s: exit %d\n%s%s", mutant, r.status, r.out, r.err);
  json_error_t je;
  json_t *doc = json_load_file(json, 0, &je);
  unlink(json);
  ck_assert_msg(doc, "%s: %s", mutant, je.text);
  json_t *cases = json_object_get(doc, "cases");
  ck_assert_int_eq(json_array_size(cases), 2);
  const int want[2] = {k0, k1};
  for (size_t i = 0; i < 2; i++) {
    const int pass = json_is_true(json_object_get(json_array_get(cases, i), "pass"));
    ck_assert_msg(pass == !want[i], "%s: case %zu pass %d", mutant, i, pass);
    /* the case records its mutant (and a correct run records none) */
    json_t *m = json_object_get(json_array_get(cases, i), "mutant");
    if (!strcmp(mutant, "none"))
      ck_assert_ptr_null(m);
    else
      ck_assert_msg(m && !strcmp(json_string_value(m), mutant), "%s: case %zu mutant key", mutant, i);
  }
  json_decref(doc);
}

START_TEST(known_killers) {
  expect("none", 0, 0);
  expect("carry-zero", 1, 1);
  expect("gqa-tile", 1, 0);
  expect("reset-missing", 0, 1);
  expect("final-from-replay", 0, 0);
  expect("bf16-cast-added", 1, 1);
  expect("bf16-cast-missing", 0, 0);
}
END_TEST

START_TEST(unknown_mutant) {
  char *argv[] = {(char *)exe, "sweep", "--grid", (char *)grid, "--mutant", "carry_zero", NULL};
  cli_result r;
  cli_run(&r, argv);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "--mutant") && strstr(r.err, "carry_zero") && strstr(r.err, "carry-zero"),
                "%s", r.err);
}
END_TEST

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_mutant_grid GDN_PARITY GRID.json (got %d arguments)\n", argc - 1);
    return 2;
  }
  exe = argv[1];
  grid = argv[2];
  Suite *su = suite_create("mutant_grid");
  CKR_TCASE(su, "mutant_grid", 120, known_killers, unknown_mutant);
  return ckr_run(su);
}
