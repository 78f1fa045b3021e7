/* gdn-parity coverage (parity_coverage.h, report_coverage.h).
 *
 * Units: the greedy set cover on planted matrices (known answers, the tie
 * rule, the textbook case where greedy is not minimal), the --mutants
 * parser and the README rule.  Through the CLI, on tests/parity's small
 * grids (three entries, each under a second):
 *   - known killers: coverage-small.json's entry 0 has 2 devices and
 *     Hk = Hv, entry 1 grouped heads (Hk 2 < Hv 4) and h0, entry 2 one
 *     device.  gqa-tile is killed by entry 1 exactly (elsewhere tile and
 *     repeat read the same key head: the mutant is the correct program),
 *     carry-zero by entries 0 and 1 (no seam in entry 2), scale-none by all
 *     three (it changes every output); the cover is {1}.
 *   - the negative control: coverage-nogqa.json lacks entry 1, so gqa-tile
 *     survives: a JUnit failure naming it, exit 1; the same run with
 *     --mutants carry-zero (killed) exits 0.
 *   - --reproducible: two runs (1 and 2 threads) give byte-identical JSON,
 *     HTML, JUnit and Markdown.
 *   - a bad --mutants name: exit 2, the message names it and lists the
 *     valid names, and no output file is written.
 *   - the correct kernels failing (a policy whose float32 band is 0.01u,
 *     which the stock scan's measured 3-6u cannot meet): the document says
 *     so (correct_pass false, the failing case and check), exit 1 although
 *     the one mutant is killed; the same run with the built-in policy
 *     exits 0 (the control). */
#include <check.h>
#include <jansson.h>
#include <sys/stat.h>

#include "cli_run.h"
#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "parity_budget.h"
#include "parity_policy.h"
#include "kern_mutant.h"
#include "gdn_synth.h"
#include "kern.h"
#include "parity_coverage.h"
#include "parity_readme.h"
#include "parity_subject.h"
#include "report_coverage.h"
#include "../check_runner.h"

static char *exe, *testdir;

/* ---- units ---- */

START_TEST(cover_planted) {
  /* 5 cases x 6 mutants; mutant 5 is killed by no case (not killable). */
  static const unsigned char k[5][6] = {
      {1, 1, 1, 0, 0, 0}, /* case 0: 3 kills */
      {0, 0, 1, 1, 0, 0}, /* case 1 */
      {0, 0, 0, 1, 1, 0}, /* case 2: the 2 left after case 0 */
      {1, 1, 1, 0, 0, 0}, /* case 3: ties with case 0, loses (higher index) */
      {0, 0, 0, 0, 1, 0}, /* case 4 */
  };
  size_t picked[5];
  size_t n = parity_coverage_cover(&k[0][0], 5, 6, picked);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(picked[0], 0);
  ck_assert_uint_eq(picked[1], 2);
  /* Without case 0 its twin, case 3, is picked in its place: the tie, not
   * the row, decided above. */
  n = parity_coverage_cover(&k[1][0], 4, 6, picked); /* cases 1..4 */
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(picked[0], 2); /* case 3 of the full matrix */
}
END_TEST

START_TEST(cover_greedy_not_minimal) {
  /* X = {0,1,2}, Y = {3,4,5} cover in 2; Z = {0,1,3,4} is larger, so
   * greedy takes Z first and needs X and Y after it: 3 cases, not 2. */
  static const unsigned char k[3][6] = {{1, 1, 1, 0, 0, 0}, {0, 0, 0, 1, 1, 1}, {1, 1, 0, 1, 1, 0}};
  size_t picked[3];
  ck_assert_uint_eq(parity_coverage_cover(&k[0][0], 3, 6, picked), 3);
  ck_assert_uint_eq(picked[0], 2);
  ck_assert_uint_eq(picked[1], 0);
  ck_assert_uint_eq(picked[2], 1);
  /* nothing killable: an empty cover */
  static const unsigned char z[2][2] = {{0, 0}, {0, 0}};
  ck_assert_uint_eq(parity_coverage_cover(&z[0][0], 2, 2, picked), 0);
}
END_TEST

START_TEST(parse_mutants) {
  kern_mutant m[KERN_MUTANT_COUNT];
  size_t n = 0;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_coverage_parse_mutants("all", m, &n, &e), GDN_OK);
  ck_assert_uint_eq(n, KERN_MUTANT_COUNT - 1); /* the catalogue's rows, whatever their number */
  for (size_t i = 0; i < n; i++) ck_assert_int_eq(m[i], (int)i + 1);
  /* catalogue order (the control for the refusals below) */
  ck_assert_int_eq(parity_coverage_parse_mutants("gqa-tile,carry-zero", m, &n, &e), GDN_OK);
  ck_assert_uint_eq(n, 2);
  ck_assert_int_eq(m[0], KERN_MUTANT_CARRY_ZERO);
  ck_assert_int_eq(m[1], KERN_MUTANT_GQA_TILE);
  static const char *const bad[] = {"", "none", "carry-zero,", "carry-zero,,gqa-tile", "Carry-Zero", "bogus"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gdn_error_init(&e);
    ck_assert_msg(parity_coverage_parse_mutants(bad[i], m, &n, &e) == GDN_ERR_INPUT, "accepted '%s'", bad[i]);
    ck_assert_msg(strstr(e.msg, "compose-order") && strstr(e.msg, "reset-late"), "'%s': %s", bad[i], e.msg);
  }
  /* a repeated name is refused (as repeated devices are),
   * and 'all' inside a list is not called unknown: it stands alone. */
  static const char *const twice[] = {"carry-zero,carry-zero", "gqa-tile,carry-zero,gqa-tile"};
  for (size_t i = 0; i < 2; i++) {
    gdn_error_init(&e);
    ck_assert_msg(parity_coverage_parse_mutants(twice[i], m, &n, &e) == GDN_ERR_INPUT, "accepted '%s'", twice[i]);
    ck_assert_msg(strstr(e.msg, "listed twice"), "'%s': %s", twice[i], e.msg);
  }
  static const char *const with_all[] = {"all,carry-zero", "carry-zero,all"};
  for (size_t i = 0; i < 2; i++) {
    gdn_error_init(&e);
    ck_assert_int_eq(parity_coverage_parse_mutants(with_all[i], m, &n, &e), GDN_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, "'all' stands alone") && !strstr(e.msg, "unknown"), "'%s': %s", with_all[i], e.msg);
  }
}
END_TEST

static int readme_parse(const char *text, parity_readme_unkillable *u, gdn_error *e) {
  gdn_error_init(e);
  return parity_readme_parse(text, "R.md", u, e);
}

#define SEC "# x\n\n## What a test must cover first\n\n"
#define HDR "| mutant | why it cannot be killed |\n|---|---|\n"

/* only the explicit table explains, one row per mutant. */
START_TEST(readme_table) {
  parity_readme_unkillable u;
  gdn_error e;
  /* the table: rows at lines 7 and 8 (the header is line 5) */
  const char *ok = SEC HDR "| `final-from-replay` | round-off only |\n| `bf16-cast-missing` |  below bfloat16's own "
                   "rounding \\| points |\n\nfinal-from-replay is caught.\n\n## Commands\n\n"
                   "| `h0-every` | not in the section |\n";
  ck_assert_int_eq(readme_parse(ok, &u, &e), GDN_OK);
  ck_assert_int_eq(u.table_line, 5);
  ck_assert_int_eq(u.line[KERN_MUTANT_FINAL_FROM_REPLAY], 7);
  ck_assert_int_eq(u.line[KERN_MUTANT_BF16_CAST_MISSING], 8);
  ck_assert_int_eq(u.line[KERN_MUTANT_H0_EVERY], 0); /* outside the section */
  /* The old rule's failure: prose naming a mutant beside "cannot be killed"
   * explains nothing now (the project README had such paragraphs for
   * reset-missing, reset-late, bf16-seam, bf16-cast-added). */
  const char *prose = SEC "reset-missing and final-from-replay cannot be killed by upstream's tests.\n\n"
                      "| mutant | their test |\n|---|---|\n| `reset-missing` | cannot be killed |\n";
  ck_assert_int_eq(readme_parse(prose, &u, &e), GDN_OK);
  ck_assert_int_eq(u.table_line, 0);
  for (int m = 0; m < KERN_MUTANT_COUNT; m++) ck_assert_int_eq(u.line[m], 0);
  ck_assert_int_eq(readme_parse(NULL, &u, &e), GDN_OK);
  ck_assert_int_eq(u.table_line, 0);
  /* refused, each naming the README and the line */
  static const struct {
    const char *text, *line, *says;
  } bad[] = {
      {SEC HDR "| `final-from-replay` |\n", "line 7", "exactly 2 cells"},
      {SEC HDR "| `final-from-replay` | a | b |\n", "line 7", "exactly 2 cells"},
      {SEC HDR "| final-from-replay | round-off |\n", "line 7", "backticks"},
      {SEC HDR "| `final-from-replay bf16-seam` | x |\n", "line 7", "not a catalogued mutant"},
      {SEC HDR "| `final-from-reply` | x |\n", "line 7", "not a catalogued mutant"},
      {SEC HDR "| `none` | x |\n", "line 7", "none is the correct program"},
      {SEC HDR "| `final-from-replay` | x |\n| `bf16-cast-missing` | y |\n| `final-from-replay` | z |\n", "line 9",
       "listed twice (first at line 7)"},
      {SEC HDR "| `final-from-replay` |  |\n", "line 7", "no reason"},
      {SEC HDR "| `reset-missing` | needs documents |\n", "line 7", "grids/upstream-pr.json kills it"},
      {SEC HDR "| `bf16-cast-added` | small |\n", "line 7", "grids/upstream-pr.json kills it"},
      {SEC "| mutant | why it cannot be killed |\n| `final-from-replay` | x |\n", "line 6", "delimiter row"},
      {SEC HDR "| `final-from-replay` | x |\n\n" HDR, "line 9", "a second table"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_msg(readme_parse(bad[i].text, &u, &e) == GDN_ERR_INPUT, "accepted #%zu", i);
    ck_assert_msg(strstr(e.msg, "R.md ") && strstr(e.msg, bad[i].line) && strstr(e.msg, bad[i].says), "#%zu: %s", i,
                  e.msg);
  }
  /* the catalogue's column: exactly the two README survivors are not killed
   * by the recommended grid (the CLI test below runs that grid) */
  for (int m = 1; m < KERN_MUTANT_COUNT; m++)
    ck_assert_int_eq(kern_mutant_row_of((kern_mutant)m)->killed_by_recommended,
                     m != KERN_MUTANT_FINAL_FROM_REPLAY && m != KERN_MUTANT_BF16_CAST_MISSING);
}
END_TEST

/* The README is read as GitHub reads its Markdown (CommonMark, GFM tables):
 * a table inside an HTML comment, a code fence or an indented code block is
 * no table; a "## " line inside a fence is no heading (the section goes on,
 * the real table after it counts); a UTF-8 byte order mark is no text; a row
 * ending "reason \|" (an escaped pipe) has two cells.  The control: the same
 * table as a plain block of the section counts, at its line. */
START_TEST(readme_markdown_blocks) {
  parity_readme_unkillable u;
  gdn_error e;
  static const struct {
    const char *text;
    int table_line, row_line;
  } cases[] = {
      {SEC HDR "| `final-from-replay` | round-off only |\n", 5, 7}, /* the control */
      {SEC "<!--\n" HDR "| `final-from-replay` | round-off only |\n-->\n", 0, 0},
      {SEC "```\n" HDR "| `final-from-replay` | round-off only |\n```\n", 0, 0},
      {SEC "    | mutant | why it cannot be killed |\n    |---|---|\n    | `final-from-replay` | x |\n", 0, 0},
      {SEC "```\n## not a heading\n```\n\n" HDR "| `final-from-replay` | round-off only |\n", 9, 11},
      {"\xef\xbb\xbf## What a test must cover first\n\n" HDR "| `final-from-replay` | round-off only |\n", 3, 5},
      {SEC HDR "| `final-from-replay` | reason \\|\n", 5, 7},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_msg(readme_parse(cases[i].text, &u, &e) == GDN_OK, "#%zu: %s", i, e.msg);
    ck_assert_msg(u.table_line == cases[i].table_line, "#%zu: table at line %d", i, u.table_line);
    ck_assert_msg(u.line[KERN_MUTANT_FINAL_FROM_REPLAY] == cases[i].row_line, "#%zu: row at line %d", i,
                  u.line[KERN_MUTANT_FINAL_FROM_REPLAY]);
  }
}
END_TEST

/* The mutant subject rows: one per catalogue row, named by it, judged by
 * the affine-prefix rules; producing row m is bit-identical to the
 * affine-prefix kernel with cfg.mutant = m, and (the control) differs from
 * the correct kernel for a mutant that changes every output. */
START_TEST(mutant_rows) {
  ck_assert_ptr_null(parity_subject_mutant(KERN_MUTANT_NONE));
  ck_assert_ptr_null(parity_subject_mutant(KERN_MUTANT_COUNT));
  ck_assert_int_eq(parity_subject_mutant_of(&parity_subject_affine), KERN_MUTANT_NONE);
  for (int m = 1; m < KERN_MUTANT_COUNT; m++) {
    const parity_subject_methods *r = parity_subject_mutant((kern_mutant)m);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->name, kern_mutant_name((kern_mutant)m));
    ck_assert_uint_eq(r->kind, PARITY_SUBJ_AFFINE);
    ck_assert_int_eq(r->role, PARITY_ROLE_JUDGED);
    ck_assert_int_eq(r->stage, PARITY_STAGE_CASE);
    ck_assert_int_eq(parity_subject_mutant_of(r), m);
  }
  gdn_error e;
  gdn_error_init(&e);
  gdn_shape sh = {1, 48, 2, 4, 8, 8};
  gdn_synth_opts so = {7, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 0};
  gdn_inputs in;
  gdn_inputs_init(&in);
  ck_assert_int_eq(gdn_synth_generate(&in, &sh, &so, &e), GDN_OK);
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.chunk = 8;
  cfg.devices = 3;
  const size_t n = (size_t)(sh.B * sh.T * sh.Hv * sh.Dv);
  static const kern_mutant check[] = {KERN_MUTANT_GQA_TILE, KERN_MUTANT_SCALE_NONE, KERN_MUTANT_CARRY_ZERO};
  gdn_outputs good;
  gdn_outputs_init(&good);
  ck_assert_int_eq(kern_affine_prefix(&in, &cfg, &good, &e), GDN_OK);
  for (size_t i = 0; i < sizeof check / sizeof check[0]; i++) {
    parity_subject_run run;
    parity_subject_run_init(&run, parity_subject_mutant(check[i]));
    parity_produce_ctx cx = {&in, &cfg, 0, NULL, NULL};
    ck_assert_int_eq(parity_subject_produce(&run, &cx, &e), GDN_OK);
    ck_assert_uint_eq(run.present, PARITY_TENSOR_FORWARD);
    kern_config mc = cfg;
    mc.mutant = check[i];
    gdn_outputs want;
    gdn_outputs_init(&want);
    ck_assert_int_eq(kern_affine_prefix(&in, &mc, &want, &e), GDN_OK);
    ck_assert_msg(!memcmp(run.out->o, want.o, n * sizeof(double)), "%s: o differs", run.name);
    ck_assert_msg(memcmp(run.out->o, good.o, n * sizeof(double)), "%s: o equals the correct kernel's", run.name);
    gdn_outputs_clear(&want);
    parity_subject_run_clear(&run);
  }
  gdn_outputs_clear(&good);
  gdn_inputs_clear(&in);
}
END_TEST

/* The writers refuse what is not a version-1 coverage document, and then
 * write nothing (the set is aborted); a valid minimal one renders. */
START_TEST(writers_validate) {
  const char *good = "{\"schema\": \"gdn-parity-coverage\", \"version\": 1, \"mutants\": [{\"name\": \"m\"}], "
                     "\"cases\": [{\"kills\": [{\"mutant\": \"m\", \"killed\": false}]}], "
                     "\"survivors\": [{\"name\": \"m\", \"readme_explains\": null}], \"cover\": {\"cases\": []}}";
  json_error_t je;
  json_t *doc = json_loads(good, 0, &je);
  ck_assert_msg(doc, "%s", je.text);
  gdn_error e;
  gdn_error_init(&e);
  report_buf b;
  report_buf_init(&b);
  ck_assert_int_eq(report_coverage_junit_render(doc, &b, &e), GDN_OK);
  ck_assert_ptr_nonnull(strstr(b.data, "<failure")); /* the survivor */
  report_buf_clear(&b);
  static const char *const breakers[][2] = {{"schema", "\"gdn-parity\""}, {"version", "2"},
                                            {"cases", "[{\"kills\": []}]"}, {"cover", "[]"}};
  char path[] = "/tmp/gdn-cov-w-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  unlink(path);
  for (size_t i = 0; i < sizeof breakers / sizeof breakers[0]; i++) {
    json_t *bad = json_deep_copy(doc), *v = json_loads(breakers[i][1], JSON_DECODE_ANY, &je);
    ck_assert_ptr_nonnull(v);
    json_object_set_new(bad, breakers[i][0], v);
    gdn_error_init(&e);
    ck_assert_int_eq(report_coverage_write_all(bad, path, NULL, NULL, NULL, &e), GDN_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, "coverage document"), "%s", e.msg);
    ck_assert_int_ne(access(path, F_OK), 0); /* nothing written */
    json_decref(bad);
  }
  gdn_error_init(&e);
  ck_assert_int_eq(report_coverage_write_all(doc, path, NULL, NULL, NULL, &e), GDN_OK);
  ck_assert_int_eq(access(path, F_OK), 0);
  unlink(path);
  json_decref(doc);
  /* A contradiction (a mutant the README's table calls unkillable that a
   * case kills) is a JUnit failure naming the line and the case; without
   * it the killed mutant passes (the control). */
  const char *killed = "{\"schema\": \"gdn-parity-coverage\", \"version\": 1, \"mutants\": [{\"name\": \"m\"}], "
                       "\"cases\": [{\"correct_pass\": true, \"kills\": [{\"mutant\": \"m\", \"killed\": true}]}], "
                       "\"survivors\": [], \"cover\": {\"cases\": [0]}}";
  doc = json_loads(killed, 0, &je);
  ck_assert_msg(doc, "%s", je.text);
  report_buf_init(&b);
  ck_assert_int_eq(report_coverage_junit_render(doc, &b, &e), GDN_OK);
  ck_assert_msg(!strstr(b.data, "<failure") && strstr(b.data, "failures=\"0\""), "%s", b.data);
  report_buf_clear(&b);
  json_object_set_new(doc, "readme_contradictions", json_loads("[{\"name\": \"m\", \"readme_line\": 12, \"case\": 0}]", 0, &je));
  report_buf_init(&b);
  ck_assert_int_eq(report_coverage_junit_render(doc, &b, &e), GDN_OK);
  ck_assert_msg(strstr(b.data, "failures=\"1\"") &&
                strstr(b.data, "<failure message=\"the README (line 12) lists mutant m as unkillable, but case 0 kills it"),
                "%s", b.data);
  report_buf_clear(&b);
  json_decref(doc);
}
END_TEST

/* ---- through the CLI ---- */

/* gdn-parity coverage of tests/parity/grid_file against `mutants`, with
 * one more option `opt` `val` ("--threads" N, or "--readme" PATH for the
 * mutants it explains as unkillable), every output into o. */
static void coverage(cli_result *r, const char *grid_file, const char *mutants, const char *opt, const char *val,
                     const cli_outs *o) {
  char grid[512];
  snprintf(grid, sizeof grid, "%s/%s", testdir, grid_file);
  char *argv[] = {(char *)exe, "coverage", "--grid", grid, "--mutants", (char *)mutants, (char *)opt, (char *)val,
                  "--reproducible", "--quiet", "--json", (char *)o->json, "--report", (char *)o->html,
                  "--junit", (char *)o->junit, "--summary", (char *)o->md, NULL};
  cli_run(r, argv);
}

/* r's exit status must be `want` (with its output in the message);
 * returns the JSON the run wrote to o->json. */
static json_t *coverage_doc(const cli_result *r, int want, const cli_outs *o) {
  ck_assert_msg(r->status == want, "exit %d\n%s%s", r->status, r->out, r->err);
  json_error_t je;
  json_t *doc = json_load_file(o->json, 0, &je);
  ck_assert_msg(doc, "%s", je.text);
  return doc;
}

/* The usual test: fresh output files o, one coverage run (as coverage),
 * its exit status `want`, its JSON. */
static json_t *coverage_json(cli_outs *o, const char *grid_file, const char *mutants, const char *opt, const char *val,
                             int want) {
  cli_outs_make(o, "/tmp/gdn-cov");
  cli_result r;
  coverage(&r, grid_file, mutants, opt, val, o);
  return coverage_doc(&r, want, o);
}

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "%s missing", path);
  char *buf = malloc(1 << 20);
  *n = fread(buf, 1, (1 << 20) - 1, f);
  buf[*n] = '\0';
  fclose(f);
  return buf;
}

/* The cases (by index) that kill `mutant` in the document. */
static unsigned killers(const json_t *doc, const char *mutant) {
  const json_t *cases = json_object_get(doc, "cases");
  unsigned mask = 0;
  for (size_t c = 0; c < json_array_size(cases); c++) {
    const json_t *ks = json_object_get(json_array_get(cases, c), "kills");
    for (size_t m = 0; m < json_array_size(ks); m++) {
      const json_t *k = json_array_get(ks, m);
      if (strcmp(json_string_value(json_object_get(k, "mutant")), mutant)) continue;
      if (json_is_true(json_object_get(k, "killed"))) {
        mask |= 1u << c;
        /* a kill names its check, and fails it: value above limit */
        ck_assert_ptr_nonnull(json_string_value(json_object_get(k, "tensor")));
        ck_assert_ptr_nonnull(json_string_value(json_object_get(k, "rule")));
        ck_assert(json_real_value(json_object_get(k, "margin")) > 1.0);
      }
    }
  }
  return mask;
}

START_TEST(known_killers) {
  cli_outs o;
  json_t *doc = coverage_json(&o, "coverage-small.json", "gqa-tile,carry-zero,scale-none", "--threads", "2", 0);
  ck_assert_str_eq(json_string_value(json_object_get(doc, "schema")), "gdn-parity-coverage");
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "version")), 1);
  ck_assert(json_is_true(json_object_get(doc, "correct_pass")));
  ck_assert_uint_eq(killers(doc, "gqa-tile"), 0x2);   /* entry 1 only */
  ck_assert_uint_eq(killers(doc, "carry-zero"), 0x3); /* entries with a seam */
  ck_assert_uint_eq(killers(doc, "scale-none"), 0x7); /* all */
  const json_t *pc = json_object_get(json_object_get(doc, "cover"), "cases");
  ck_assert_uint_eq(json_array_size(pc), 1);
  ck_assert_int_eq(json_integer_value(json_array_get(pc, 0)), 1);
  ck_assert_ptr_null(json_object_get(json_object_get(doc, "cover"), "seconds")); /* --reproducible */
  /* The HTML kill matrix: a row per mutant, a killed cell per kill (6). */
  size_t n;
  char *html = slurp(o.html, &n);
  ck_assert_ptr_nonnull(strstr(html, "id=\"kill-matrix\""));
  size_t rows = 0, kills = 0;
  for (const char *p = html; (p = strstr(p, "<tr><th title=")); p++) rows++;
  for (const char *p = html; (p = strstr(p, "class=\"kill\" title=")); p++) kills++;
  ck_assert_uint_eq(rows, 3);
  ck_assert_uint_eq(kills, 6);
  free(html);
  char *xml = slurp(o.junit, &n);
  ck_assert_ptr_null(strstr(xml, "<failure"));
  free(xml);
  json_decref(doc);
  cli_outs_unlink(&o);
}
END_TEST

START_TEST(negative_control) {
  cli_outs o;
  json_t *doc = coverage_json(&o, "coverage-nogqa.json", "gqa-tile,carry-zero", "--threads", "2", 1);
  ck_assert_uint_eq(killers(doc, "gqa-tile"), 0);
  ck_assert_uint_eq(killers(doc, "carry-zero"), 0x1);
  const json_t *surv = json_object_get(doc, "survivors");
  ck_assert_uint_eq(json_array_size(surv), 1);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(surv, 0), "name")), "gqa-tile");
  ck_assert(json_is_false(json_object_get(doc, "pass")));
  json_decref(doc);
  size_t n;
  char *xml = slurp(o.junit, &n);
  ck_assert_ptr_nonnull(strstr(xml, "failures=\"1\""));
  const char *tc = strstr(xml, "name=\"gqa-tile\">");
  ck_assert_msg(tc && strstr(tc, "<failure"), "%s", xml);
  ck_assert_ptr_nonnull(strstr(xml, "name=\"carry-zero\"/>")); /* killed: no failure */
  free(xml);
  /* The same grid with only a mutant it kills: exit 0. */
  cli_result r;
  coverage(&r, "coverage-nogqa.json", "carry-zero", "--threads", "2", &o);
  ck_assert_msg(r.status == 0, "exit %d\n%s%s", r.status, r.out, r.err);
  cli_outs_unlink(&o);
}
END_TEST

/* A README file holding `text`, its path in path (room for 64). */
static void readme_make(char *path, const char *text) {
  strcpy(path, "/tmp/gdn-coverage-readme-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
}

/* A survivor the README's table lists as unkillable is skipped, not failed:
 * coverage-nogqa.json never kills final-from-replay; with a README whose
 * table lists it the run exits 0 with one skipped JUnit case.  The negative
 * control: the same README saying so in prose only ("cannot be killed",
 * what the old rule took as an explanation) explains nothing: exit 1. */
START_TEST(explained_survivor_skipped) {
  char readme[64];
  readme_make(readme, "# r\n\n## What a test must cover first\n\n| mutant | why it cannot be killed |\n"
                      "|---|---|\n| `final-from-replay` | round-off only |\n");
  cli_outs o;
  json_t *doc = coverage_json(&o, "coverage-nogqa.json", "carry-zero,final-from-replay", "--readme", readme, 0);
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "unexplained_survivors")), 0);
  ck_assert(json_is_true(json_object_get(doc, "pass")));
  const json_t *s0 = json_array_get(json_object_get(doc, "survivors"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(s0, "name")), "final-from-replay");
  ck_assert_int_eq(json_integer_value(json_object_get(s0, "readme_line")), 7);
  ck_assert_uint_eq(json_array_size(json_object_get(doc, "readme_contradictions")), 0);
  json_decref(doc);
  size_t n;
  char *xml = slurp(o.junit, &n);
  ck_assert_msg(strstr(xml, "failures=\"0\" errors=\"0\" skipped=\"1\""), "%s", xml);
  const char *tc = strstr(xml, "name=\"final-from-replay\">");
  ck_assert_msg(tc && strstr(tc, "<skipped message=\"no case kills mutant final-from-replay"), "%s", xml);
  free(xml);
  unlink(readme);
  readme_make(readme, "# r\n\n## What a test must cover first\n\nfinal-from-replay cannot be killed.\n");
  cli_result r;
  coverage(&r, "coverage-nogqa.json", "carry-zero,final-from-replay", "--readme", readme, &o);
  ck_assert_msg(r.status == 1, "prose explained a survivor: exit %d\n%s%s", r.status, r.out, r.err);
  unlink(readme);
  cli_outs_unlink(&o);
}
END_TEST

/* the README table, with the project's own README: its prose names
 * reset-missing and reset-late beside "cannot be killed" (upstream's tests
 * cannot), which the old rule took as an explanation, so a grid without
 * packed documents (coverage-small.json, where neither can be killed)
 * passed (exit 0).  Now they are unexplained survivors: exit 1.
 * The control: the table's final-from-replay alone on the same grid is
 * explained (exit 0). */
START_TEST(project_readme_excuses_only_its_table) {
  char readme[512];
  snprintf(readme, sizeof readme, "%s/../../README.md", testdir);
  cli_outs o;
  json_t *doc =
      coverage_json(&o, "coverage-small.json", "reset-missing,reset-late,final-from-replay", "--readme", readme, 1);
  const json_t *surv = json_object_get(doc, "survivors");
  ck_assert_uint_eq(json_array_size(surv), 3);
  for (size_t i = 0; i < 3; i++) {
    const json_t *s = json_array_get(surv, i);
    const char *nm = json_string_value(json_object_get(s, "name"));
    ck_assert_msg(json_is_true(json_object_get(s, "readme_explains")) == !strcmp(nm, "final-from-replay"), "%s", nm);
  }
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "unexplained_survivors")), 2);
  json_decref(doc);
  cli_result r;
  coverage(&r, "coverage-small.json", "final-from-replay", "--readme", readme, &o);
  ck_assert_msg(r.status == 0, "control: exit %d\n%s%s", r.status, r.out, r.err);
  cli_outs_unlink(&o);
}
END_TEST

/* A README table claiming a killable mutant (reset-missing: the recommended
 * grid kills it) is an input error naming the README and the line, before
 * any case runs; nothing is written.  (The control is the test above: the
 * table of final-from-replay is accepted.) */
START_TEST(readme_claims_killable_refused) {
  cli_outs o;
  cli_outs_make(&o, "/tmp/gdn-cov");
  cli_outs_unlink(&o);
  char readme[64];
  readme_make(readme, "# r\n\n## What a test must cover first\n\n| mutant | why it cannot be killed |\n"
                      "|---|---|\n| `final-from-replay` | round-off |\n| `reset-missing` | claimed |\n");
  cli_result r;
  coverage(&r, "coverage-small.json", "reset-missing", "--readme", readme, &o);
  ck_assert_msg(r.status == 2, "exit %d\n%s%s", r.status, r.out, r.err);
  ck_assert_msg(strstr(r.err, readme) && strstr(r.err, "line 8") && strstr(r.err, "reset-missing"), "%s", r.err);
  struct stat st;
  ck_assert_int_ne(stat(o.json, &st), 0);
  ck_assert_int_ne(stat(o.junit, &st), 0);
  unlink(readme);
}
END_TEST

/* A grid entry with "grad": both sweeps run the backward; the
 * backward-only row grad-seam-stopped is killed there by a gradient check
 * (tensor dq .. dh0), and survives the same entry without "grad" (the
 * control: its forward is the correct program's); the forward row carry-zero is killed by both entries, on o or
 * ht; the correct kernels pass both. */
START_TEST(grad_entry) {
  cli_outs o;
  json_t *doc = coverage_json(&o, "coverage-grad.json", "carry-zero,grad-seam-stopped", "--threads", "1", 0);
  ck_assert_uint_eq(killers(doc, "grad-seam-stopped"), 0x1); /* entry 1 (forward only): survives */
  ck_assert_uint_eq(killers(doc, "carry-zero"), 0x3);
  const json_t *cases = json_object_get(doc, "cases");
  for (size_t c = 0; c < 2; c++) {
    const json_t *jc = json_array_get(cases, c);
    ck_assert(json_is_true(json_object_get(jc, "correct_pass")));
    const json_t *ks = json_object_get(jc, "kills");
    for (size_t m = 0; m < json_array_size(ks); m++) {
      const json_t *k = json_array_get(ks, m);
      if (!json_is_true(json_object_get(k, "killed"))) continue;
      const char *t = json_string_value(json_object_get(k, "tensor"));
      const int grad_tensor = t[0] == 'd' && strcmp(t, "o") && strcmp(t, "ht");
      const int backward = !strcmp(json_string_value(json_object_get(k, "mutant")), "grad-seam-stopped");
      ck_assert_msg(grad_tensor == backward, "case %zu: %s killed on %s", c,
                    json_string_value(json_object_get(k, "mutant")), t);
    }
  }
  json_decref(doc);
  cli_outs_unlink(&o);
}
END_TEST

/* The project's grid (grids/upstream-pr.json, the default oracle) against
 * every mutant with the project's README: it kills exactly the mutants the
 * catalogue marks killed_by_recommended, every mutant the README's table
 * lists survives it (and is explained), no contradiction, exit 0. */
START_TEST(recommended_grid_and_readme_agree) {
  char readme[512];
  snprintf(readme, sizeof readme, "%s/../../README.md", testdir);
  size_t n;
  char *text = slurp(readme, &n);
  parity_readme_unkillable u;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(parity_readme_parse(text, readme, &u, &e) == GDN_OK, "%s", e.msg);
  free(text);
  ck_assert_int_gt(u.table_line, 0);
  cli_outs o;
  json_t *doc = coverage_json(&o, "../../grids/upstream-pr.json", "all", "--readme", readme, 0);
  size_t listed = 0;
  for (int m = 1; m < KERN_MUTANT_COUNT; m++) {
    const kern_mutant_row *row = kern_mutant_row_of((kern_mutant)m);
    unsigned k = killers(doc, row->name);
    ck_assert_msg((k != 0) == row->killed_by_recommended, "%s: killed by cases 0x%x, catalogue says %d", row->name, k,
                  row->killed_by_recommended);
    if (u.line[m]) listed++;
    ck_assert_msg(!u.line[m] || !k, "README line %d lists %s as unkillable, the grid kills it", u.line[m], row->name);
  }
  ck_assert_uint_eq(listed, 2);
  ck_assert_uint_eq(json_array_size(json_object_get(doc, "survivors")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "unexplained_survivors")), 0);
  ck_assert_uint_eq(json_array_size(json_object_get(doc, "readme_contradictions")), 0);
  json_decref(doc);
  cli_outs_unlink(&o);
}
END_TEST

/* before, coverage held one output set per mutant (4.3-4.8x its
 * --max-bytes) while --max-bytes counted the inputs and three.  Now the
 * mutant sweep produces, measures and releases one mutant at a time and
 * the budget counts four output sets (reference, scan, affine-prefix, one
 * mutant).  B = least_budget is the smallest --max-bytes the CLI accepts for
 * the entry (found by bisection through parity_budget_check with four output
 * sets, one thread); a coverage run of all 18 mutants, in-process so the
 * heap is gdn_alloc's accounting, must peak at or below B (measured: 6.30
 * MB against B = 6.47 MB; before the fix the 18 mutants' outputs were held
 * at once, 24.3 MB).  The budget counts the dominant terms only (parity_budget.h:
 * not the oracle's working set, the metrics or the profiles, about 0.3 MB
 * here), so the shape is one where the outputs dominate: at T = 1024 those
 * terms alone put even a run without mutants over its budget.  The controls:
 * the CLI refuses --max-bytes B - 1 (so B is the budget it enforces) and
 * accepts B (one mutant there: the budget does not depend on their number,
 * and under ASan the grid takes about 50 s a run). */
#define MEM_GRID "{\"entries\": [{\"shape\": \"1,4096,1,32\", \"gates\": \"slow\", \"chunk\": [16], \"devices\": [4]}]}"

static uint64_t least_budget(const gdn_shape *s) {
  parity_sweep_opts so;
  parity_sweep_opts_init(&so);
  so.chunks[0] = 16;
  so.devices[0] = 4;
  so.n_devices = 1;
  so.devices_default = 0;
  uint64_t lo = 1, hi = 1ull << 40; /* lo refused, hi accepted */
  gdn_error e;
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    gdn_error_init(&e);
    if (parity_budget_check(s, 0, 4, &so, mid, &e)) lo = mid;
    else hi = mid;
  }
  return hi;
}

START_TEST(memory_within_max_bytes) {
  char grid[] = "/tmp/gdn-cov-memgrid-XXXXXX";
  int fd = mkstemp(grid);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, MEM_GRID, strlen(MEM_GRID)), (ssize_t)strlen(MEM_GRID));
  close(fd);
  gdn_threads_set(1);
  const gdn_shape sh = {1, 4096, 1, 1, 32, 32};
  const uint64_t B = least_budget(&sh);
  gdn_error e;
  gdn_error_init(&e);
  parity_synth_spec base;
  ck_assert_msg(parity_synth_spec_from_cli(&base, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, &e) == GDN_OK, "%s",
                e.msg);
  parity_sweep_opts so;
  parity_sweep_opts_init(&so);
  parity_grid g;
  parity_grid_init(&g);
  ck_assert_msg(parity_grid_load(&g, grid, &base, &so, &e) == GDN_OK, "%s", e.msg);
  parity_policy pol;
  parity_policy_init(&pol);
  ck_assert_int_eq(parity_policy_load_builtin(&pol, &e), GDN_OK);
  parity_coverage_opts co;
  memset(&co, 0, sizeof co);
  ck_assert_int_eq(parity_coverage_parse_mutants("all", co.mutants, &co.n_mutants, &e), GDN_OK);
  co.grid = &g;
  co.grid_name = grid;
  co.policy = &pol;
  co.tier = PARITY_ORACLE_DD;
  co.oracle_bits = 128;
  co.reproducible = 1;
  json_t *doc = NULL;
  gdn_alloc_peak_reset();
  const long long live0 = gdn_alloc_bytes_live();
  ck_assert_msg(parity_coverage_run(&co, &doc, &e) == GDN_OK, "%s", e.msg);
  const long long peak = gdn_alloc_bytes_peak();
  ck_assert_ptr_nonnull(doc);
  ck_assert(json_is_true(json_object_get(doc, "correct_pass")));
  ck_assert_int_ge(json_integer_value(json_object_get(doc, "killed")), 5); /* the mutants ran */
  json_decref(doc);
  parity_policy_clear(&pol);
  parity_grid_clear(&g);
  if (peak >= 0) { /* no byte accounting off glibc (gdn_alloc.h) */
    fprintf(stderr, "coverage memory: heap peak %lld bytes (%lld live before), budget %llu\n", peak, live0,
            (unsigned long long)B);
    ck_assert_msg((unsigned long long)peak <= B, "heap peak %lld > --max-bytes %llu the budget accepts", peak,
                  (unsigned long long)B);
  }
  /* the CLI enforces exactly B: B - 1 refused before any case, B accepted */
  char lim[32];
  snprintf(lim, sizeof lim, "%llu", (unsigned long long)(B - 1));
  char *argv[] = {(char *)exe, "coverage", "--grid", grid, "--mutants", "scale-none", "--oracle", "dd", "--threads", "1",
                  "--quiet", "--max-bytes", lim, NULL};
  cli_result r;
  cli_run(&r, argv);
  ck_assert_msg(r.status == 2 && strstr(r.err, "more than the limit"), "B - 1: exit %d\n%s", r.status, r.err);
  snprintf(lim, sizeof lim, "%llu", (unsigned long long)B);
  cli_run(&r, argv);
  ck_assert_msg(r.status == 0 || r.status == 1, "B: exit %d\n%s", r.status, r.err);
  unlink(grid);
}
END_TEST

START_TEST(reproducible) {
  cli_outs a, b;
  cli_outs_make(&a, "/tmp/gdn-cov");
  cli_outs_make(&b, "/tmp/gdn-cov");
  cli_result r;
  coverage(&r, "coverage-small.json", "all", "--threads", "1", &a);
  ck_assert_msg(r.status == 0 || r.status == 1, "exit %d\n%s%s", r.status, r.out, r.err);
  coverage(&r, "coverage-small.json", "all", "--threads", "2", &b);
  ck_assert_msg(r.status == 0 || r.status == 1, "exit %d\n%s%s", r.status, r.out, r.err);
  const char *pa[4] = {a.json, a.html, a.junit, a.md}, *pb[4] = {b.json, b.html, b.junit, b.md};
  for (int i = 0; i < 4; i++) {
    size_t na, nb;
    char *x = slurp(pa[i], &na), *y = slurp(pb[i], &nb);
    ck_assert_msg(na > 100 && na == nb && !memcmp(x, y, na), "output %d differs (%zu vs %zu bytes)", i, na, nb);
    free(x);
    free(y);
  }
  cli_outs_unlink(&a);
  cli_outs_unlink(&b);
}
END_TEST

START_TEST(bad_mutant_name) {
  cli_outs o;
  cli_outs_make(&o, "/tmp/gdn-cov");
  cli_outs_unlink(&o); /* they must stay absent */
  cli_result r;
  coverage(&r, "coverage-small.json", "carry-zero,carry-zeroo", "--threads", "1", &o);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "'carry-zeroo'") && strstr(r.err, "compose-order") && strstr(r.err, "reset-late"),
                "%s", r.err);
  struct stat st;
  ck_assert_int_ne(stat(o.json, &st), 0);
  ck_assert_int_ne(stat(o.junit, &st), 0);
  /* --mutant (one mutant, for sweep) and --grad are not coverage options */
  char *argv[] = {(char *)exe, "coverage", "--mutant", "carry-zero", NULL};
  cli_run(&r, argv);
  ck_assert_int_eq(r.status, 2);
  argv[2] = "--grad";
  argv[3] = NULL;
  cli_run(&r, argv);
  ck_assert_int_eq(r.status, 2);
  /* a grid entry asking for gradients of packed documents (no backward
   * reads segment ids): refused, naming the entry (grad_entry runs one
   * without documents) */
  char grid[] = "/tmp/gdn-cov-grid-XXXXXX";
  int fd = mkstemp(grid);
  ck_assert_int_ge(fd, 0);
  const char *text = "{\"entries\": [{\"shape\": \"1,32,2,8\", \"chunk\": [8], \"devices\": [2], \"documents\": 2, "
                     "\"packing\": \"reset\", \"grad\": true}]}";
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  char *ag[] = {(char *)exe, "coverage", "--grid", grid, "--mutants", "carry-zero", NULL};
  cli_run(&r, ag);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "entry 0") && strstr(r.err, "grad") && strstr(r.err, "documents"), "%s", r.err);
  /* an unreadable --readme */
  char *ar[] = {(char *)exe, "coverage", "--grid", grid, "--readme", "/nonexistent/README.md", NULL};
  cli_run(&r, ar);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "--readme"), "%s", r.err);
  unlink(grid);
}
END_TEST

START_TEST(correct_kernels_fail) {
  cli_result r;
  char *pp[] = {(char *)exe, "--print-policy", NULL};
  cli_run(&r, pp);
  ck_assert_int_eq(r.status, 0);
  json_error_t je;
  json_t *pol = json_loads(r.out, 0, &je);
  ck_assert_msg(pol, "%s", je.text);
  json_t *rules = json_object_get(pol, "rules");
  int found = 0;
  for (size_t i = 0; i < json_array_size(rules); i++) {
    json_t *rule = json_array_get(rules, i);
    if (strcmp(json_string_value(json_object_get(rule, "id")), "band-float32")) continue;
    json_object_set_new(rule, "limit_u", json_real(0.01));
    json_object_del(rule, "model"); /* the error model would raise the band to a correct kernel's own error */
    found = 1;
  }
  ck_assert(found);
  char path[] = "/tmp/gdn-cov-policy-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(json_dump_file(pol, path, 0), 0);
  json_decref(pol);
  cli_outs o;
  cli_outs_make(&o, "/tmp/gdn-cov");
  char grid[512];
  snprintf(grid, sizeof grid, "%s/coverage-small.json", testdir);
  char *argv[] = {(char *)exe, "coverage", "--grid", grid, "--mutants", "scale-none", "--policy", path,
                  "--json", o.json, NULL};
  cli_run(&r, argv);
  ck_assert_msg(r.status == 1, "exit %d\n%s%s", r.status, r.out, r.err);
  ck_assert_msg(strstr(r.out, "the kill matrix means nothing"), "%s", r.out);
  json_t *doc = json_load_file(o.json, 0, &je);
  ck_assert_msg(doc, "%s", je.text);
  ck_assert(json_is_false(json_object_get(doc, "correct_pass")));
  ck_assert_uint_eq(json_array_size(json_object_get(doc, "survivors")), 0);
  const char *why = json_string_value(json_object_get(json_array_get(json_object_get(doc, "cases"), 0), "correct_failure"));
  ck_assert_msg(why && strstr(why, "scan"), "%s", why ? why : "(null)");
  json_decref(doc);
  argv[6] = NULL; /* the built-in policy: the control */
  cli_run(&r, argv);
  ck_assert_msg(r.status == 0, "exit %d\n%s%s", r.status, r.out, r.err);
  unlink(path);
  cli_outs_unlink(&o);
}
END_TEST

int main(int argc, char **argv) {
  ckr_args(argc, argv, "test_coverage GDN_PARITY_EXE TESTS_PARITY_DIR", 2, &exe, &testdir);
  Suite *s = suite_create("coverage");
  CKR_TCASE(s, "units", 0, cover_planted, cover_greedy_not_minimal, parse_mutants, readme_table, readme_markdown_blocks,
      mutant_rows, writers_validate);
  CKR_TCASE(s, "cli", 240, known_killers, negative_control, explained_survivor_skipped,
      project_readme_excuses_only_its_table, readme_claims_killable_refused, grad_entry, recommended_grid_and_readme_agree,
      reproducible, memory_within_max_bytes, bad_mutant_name, correct_kernels_fail);
  /* each test; the slowest (memory, ASan) about 60 s */
  return ckr_run(s);
}
