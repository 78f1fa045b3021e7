/* grids/upstream-pr.json against the mutant catalogue through the CLI
 * (gdn-parity coverage --mutants NAME,..., one run): the kills the
 * README's table reports, case by case.  Case 0 (h0, GQA, Hillis-Steele on
 * 4 and 8 devices, padded shards, gradients judged) and case 1 (packed
 * documents, packing = reset, h0) have known killers:
 *   (none)             the correct kernels pass both cases: the negative
 *                      control of every kill below;
 *   carry-zero         both cases (the carried state matters in both);
 *   gqa-tile           case 0 only (case 1 has Hk = Hv: tile = repeat);
 *   reset-missing      case 1 only (case 0 has no documents);
 *   hs-two-rounds      case 0 only (its 8 devices: at 4 the mutant is the
 *                      correct program; case 1 is sequential);
 *   grad-seam-stopped  case 0 only (the gradients; case 1 has documents,
 *                      whose backward does not exist, so no gradients);
 *   h0-first-only      both cases (every entry has h0);
 *   final-from-replay  neither: equal in exact arithmetic, ht off by
 *                      round-off only (tests/kernels/test_mutant);
 *   bf16-cast-added    both cases (float32 compute: the rounded pairs
 *                      move o by ~6e-4 relative);
 *   bf16-cast-missing  neither: it needs bfloat16 compute, and there it
 *                      moves o by less than bfloat16's own rounding points do
 *                      (tests/kernels/test_mutant, bf16_mutants; README);
 * the two survivors are explained by the README's table (exit 0 with it);
 * and an unknown name exits 2 naming it and listing the catalogue.
 * --oracle none: the mutant is judged as affine-prefix against the scan,
 * which is what kills it (the oracle only adds the true answer). */
#include <check.h>
#include <jansson.h>

#include "cli_run.h"
#include "../check_runner.h"

static const char *exe, *grid, *readme;

/* The mutants below, their kills in cases 0 and 1 (catalogue order, as
 * coverage lists them). */
static const struct {
  const char *name;
  int k0, k1;
} known[] = {
    {"carry-zero", 1, 1},        {"gqa-tile", 1, 0},      {"reset-missing", 0, 1},
    {"bf16-cast-missing", 0, 0}, {"bf16-cast-added", 1, 1}, {"final-from-replay", 0, 0},
    {"hs-two-rounds", 1, 0},     {"h0-first-only", 1, 1}, {"grad-seam-stopped", 1, 0},
};
#define N_KNOWN (sizeof known / sizeof known[0])

/* The kill record of `mutant` in case record c. */
static const json_t *kill_of(const json_t *c, const char *mutant) {
  const json_t *ks = json_object_get(c, "kills");
  for (size_t m = 0; m < json_array_size(ks); m++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(ks, m), "mutant")), mutant))
      return json_array_get(ks, m);
  return NULL;
}

/* One coverage run of all the known mutants (one run: the correct kernels
 * once, cheap enough under ASan). */
START_TEST(known_killers) {
  char json[] = "/tmp/gdn-mutant-XXXXXX";
  int fd = mkstemp(json);
  ck_assert_int_ge(fd, 0);
  close(fd);
  char names[512] = "";
  for (size_t i = 0; i < N_KNOWN; i++) {
    if (i) strcat(names, ",");
    strcat(names, known[i].name);
  }
  char *argv[] = {(char *)exe, "coverage", "--grid", (char *)grid, "--mutants", names, "--readme",
                  (char *)readme, "--oracle", "none", "--json", json, "--quiet", NULL};
  cli_result r;
  cli_run(&r, argv);
  ck_assert_msg(r.status == 0, "exit %d\n%s%s", r.status, r.out, r.err);
  json_error_t je;
  json_t *doc = json_load_file(json, 0, &je);
  unlink(json);
  ck_assert_msg(doc, "%s", je.text);
  json_t *cases = json_object_get(doc, "cases");
  ck_assert_int_eq(json_array_size(cases), 2);
  for (size_t i = 0; i < 2; i++) {
    const json_t *c = json_array_get(cases, i);
    ck_assert_msg(json_is_true(json_object_get(c, "correct_pass")), "case %zu: the correct kernels fail", i);
    for (size_t m = 0; m < N_KNOWN; m++) {
      const json_t *k = kill_of(c, known[m].name);
      ck_assert_msg(k, "%s: case %zu has no kill record", known[m].name, i);
      const int killed = json_is_true(json_object_get(k, "killed"));
      ck_assert_msg(killed == (i ? known[m].k1 : known[m].k0), "%s: case %zu killed %d", known[m].name, i, killed);
    }
  }
  json_decref(doc);
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
  if (argc != 4) {
    fprintf(stderr, "usage: test_mutant_grid GDN_PARITY GRID.json README.md (got %d arguments)\n", argc - 1);
    return 2;
  }
  exe = argv[1];
  grid = argv[2];
  readme = argv[3];
  Suite *su = suite_create("mutant_grid");
  CKR_TCASE(su, "mutant_grid", 120, known_killers, unknown_mutant);
  return ckr_run(su);
}
