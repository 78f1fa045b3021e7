/* parity_check_shard: `check` takes the shard mode from the outputs'
 * declarations (token sharding, as upstream runs it).
 *   - the plan, row by row of the table in parity_check_shard.h, on
 *     fixtures built in memory; negative control: --shard contradicting
 *     the one declared mode is refused, naming the output and both modes;
 *   - end to end: an output declaring shard chunks is judged in a chunks
 *     case (shards [[0,2],[2,2],[4,1],[5,1]] for 6 chunks on 4 devices,
 *     array_split) recorded as "declared"; the same fixture without the
 *     declaration runs tokens, "default" (control); outputs declaring both
 *     modes give one case per mode, each judging its own outputs. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fix.h"
#include "gdn_synth.h"
#include "parity_check_shard.h"
#include "parity_cli.h"
#include "parity_oracle.h"
#include "report.h"
#include "../check_runner.h"
#include "synth_fixture.h"
#include "cli_inproc.h"

static void add_output(fix_fixture *fx, const char *name, const char *shard) {
  gdn_error e;
  gdn_error_init(&e);
  fix_output *o;
  ck_assert_int_eq(fix_fixture_add_output(fx, name, &o, &e), GDN_OK);
  if (shard) ck_assert_int_eq(fix_set_string(&o->shard, shard, &e), GDN_OK);
}

START_TEST(plan_table) {
  const struct {
    const char *decl[3]; /* per output: shard, or NULL */
    int given;
    kern_shard opt;
    int rc, n;
    kern_shard mode0;
    const char *from0;
    unsigned char run_of[3];
  } t[] = {
      {{NULL, NULL, NULL}, 0, KERN_SHARD_TOKENS, GDN_OK, 1, KERN_SHARD_TOKENS, "default", {0, 0, 0}},
      {{NULL, NULL, NULL}, 1, KERN_SHARD_CHUNKS, GDN_OK, 1, KERN_SHARD_CHUNKS, "option", {0, 0, 0}},
      {{"chunks", NULL, NULL}, 0, KERN_SHARD_TOKENS, GDN_OK, 1, KERN_SHARD_CHUNKS, "declared", {0, 0, 0}},
      {{"chunks", "chunks", NULL}, 1, KERN_SHARD_CHUNKS, GDN_OK, 1, KERN_SHARD_CHUNKS, "declared", {0, 0, 0}},
      {{"chunks", NULL, NULL}, 1, KERN_SHARD_TOKENS, GDN_ERR_INPUT, 0, 0, NULL, {0}},
      {{"chunks", "tokens", NULL}, 0, KERN_SHARD_TOKENS, GDN_OK, 2, KERN_SHARD_TOKENS, "declared", {1, 0, 0}},
      {{"chunks", "tokens", NULL}, 1, KERN_SHARD_CHUNKS, GDN_OK, 2, KERN_SHARD_TOKENS, "declared", {1, 0, 1}},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    fix_fixture fx;
    fix_fixture_init(&fx);
    char nm[8];
    for (int k = 0; k < 3; k++) {
      snprintf(nm, sizeof nm, "o%d", k);
      add_output(&fx, nm, t[i].decl[k]);
    }
    parity_shard_plan p;
    parity_shard_plan_init(&p);
    gdn_error e;
    gdn_error_init(&e);
    int rc = parity_shard_plan_make(&fx, t[i].given, t[i].opt, "f.h5", &p, &e);
    ck_assert_msg(rc == t[i].rc, "row %zu: rc %d (%s)", i, rc, e.msg);
    if (rc) {
      ck_assert_msg(strstr(e.msg, "--shard tokens contradicts /outputs/o0, which declares shard chunks"), "%s", e.msg);
    } else {
      ck_assert_int_eq(p.n, t[i].n);
      ck_assert_int_eq(p.mode[0], t[i].mode0);
      ck_assert_str_eq(p.from[0], t[i].from0);
      if (p.n == 2) ck_assert_int_eq(p.mode[1], KERN_SHARD_CHUNKS);
      for (int k = 0; k < 3; k++) ck_assert_msg(p.run_of[k] == t[i].run_of[k], "row %zu output %d", i, k);
    }
    parity_shard_plan_clear(&p);
    parity_shard_plan_clear(&p); /* twice: safe */
    fix_fixture_clear(&fx);
  }
}
END_TEST

/* A fixture of T = 96 tokens (6 chunks of 16) whose outputs are the
 * reference rounded to float32, each declaring `decl[k]` (NULL: none). */
static void write_fixture(const char *path, const char *const decl[], int n) {
  gdn_error e;
  gdn_error_init(&e);
  const gdn_shape s = {1, 96, 1, 2, 8, 8};
  fix_fixture fx;
  sfx_make(&fx, s, 5, 0, 16);
  parity_reference ref;
  parity_reference_init(&ref);
  ck_assert_int_eq(parity_reference_compute(&ref, &fx.inputs, PARITY_ORACLE_MPFR, 128, &e), GDN_OK);
  for (int k = 0; k < n; k++) {
    fix_output *o;
    char nm[16];
    snprintf(nm, sizeof nm, "cp%d", k);
    ck_assert_int_eq(fix_fixture_add_output(&fx, nm, &o, &e), GDN_OK);
    ck_assert_int_eq(gdn_outputs_alloc(&o->out, &s, GDN_DTYPE_F32, &e), GDN_OK);
    for (size_t i = 0; i < gdn_shape_numel_v(&s); i++) o->out.o[i] = (float)ref.out.o[i];
    o->has_ht = 0;
    sfx_output_attrs(o, "affine-prefix", "sequential", 4);
    if (decl[k]) ck_assert_int_eq(fix_set_string(&o->shard, decl[k], &e), GDN_OK);
  }
  ck_assert_msg(fix_write(&fx, path, &e) == GDN_OK, "%s", e.msg);
  parity_reference_clear(&ref);
  fix_fixture_clear(&fx);
}

static int run_check(const char *path, const char *js, const char *shard, json_t **doc, char *err, size_t n) {
  gdn_error e;
  gdn_error_init(&e);
  char *av[16] = {"gdn-parity", "check", "--fixture", (char *)path, "--devices", "4", "--oracle", "dd",
                  "--json", (char *)js, "--reproducible"};
  int ac = 11;
  if (shard) {
    av[ac++] = "--shard";
    av[ac++] = (char *)shard;
  }
  av[ac] = NULL;
  int st = cli_inproc(av, &e);
  snprintf(err, n, "%s", e.msg);
  *doc = NULL;
  if (st == 0 || st == 1) ck_assert_msg(report_json_read(js, doc, &e) == GDN_OK, "%s", e.msg);
  return st;
}

/* The case (devices 4) that judges output `name`, or NULL. */
static json_t *case_of(json_t *doc, const char *name) {
  json_t *cs = json_object_get(doc, "cases"), *c;
  size_t i;
  json_array_foreach(cs, i, c) {
    if (json_integer_value(json_object_get(c, "devices")) == 4 && json_object_get(json_object_get(c, "impls"), name))
      return c;
  }
  return NULL;
}

static int shards_are(json_t *c, const int64_t (*want)[2], size_t n) {
  json_t *s = json_object_get(c, "shards");
  if (json_array_size(s) != n) return 0;
  for (size_t d = 0; d < n; d++)
    if (json_integer_value(json_array_get(json_array_get(s, d), 0)) != want[d][0] ||
        json_integer_value(json_array_get(json_array_get(s, d), 1)) != want[d][1])
      return 0;
  return 1;
}

START_TEST(check_follows_declared_shard) {
  char path[] = "/tmp/gdn-shard-XXXXXX.h5", js[] = "/tmp/gdn-shard-XXXXXX.json", err[1024];
  close(mkstemps(path, 3));
  close(mkstemps(js, 5));
  static const int64_t chunks4[4][2] = {{0, 2}, {2, 2}, {4, 1}, {5, 1}}; /* array_split of 6 chunks */
  json_t *doc;
  /* declared chunks: a chunks case, "declared" */
  const char *d1[] = {"chunks"};
  write_fixture(path, d1, 1);
  ck_assert_int_eq(run_check(path, js, NULL, &doc, err, sizeof err), 0);
  json_t *c = case_of(doc, "cp0");
  ck_assert_ptr_nonnull(c);
  ck_assert_str_eq(json_string_value(json_object_get(c, "shard")), "chunks");
  ck_assert_str_eq(json_string_value(json_object_get(c, "shard_from")), "declared");
  ck_assert(shards_are(c, chunks4, 4));
  json_decref(doc);
  /* negative control: --shard tokens contradicts it */
  ck_assert_int_lt(run_check(path, js, "tokens", &doc, err, sizeof err), 0); /* an input error: exit 2 */
  ck_assert_msg(strstr(err, "--shard tokens contradicts /outputs/cp0, which declares shard chunks"), "%s", err);
  /* control: no declaration -> tokens, "default", other seams */
  const char *d0[] = {NULL};
  write_fixture(path, d0, 1);
  ck_assert_int_eq(run_check(path, js, NULL, &doc, err, sizeof err), 0);
  c = case_of(doc, "cp0");
  ck_assert_str_eq(json_string_value(json_object_get(c, "shard")), "tokens");
  ck_assert_str_eq(json_string_value(json_object_get(c, "shard_from")), "default");
  ck_assert(!shards_are(c, chunks4, 4));
  json_decref(doc);
  /* both declared: one case per mode, each judging its own output */
  const char *d2[] = {"tokens", "chunks"};
  write_fixture(path, d2, 2);
  ck_assert_int_eq(run_check(path, js, NULL, &doc, err, sizeof err), 0);
  json_t *ct = case_of(doc, "cp0"), *cc = case_of(doc, "cp1");
  ck_assert(ct && cc && ct != cc);
  ck_assert_str_eq(json_string_value(json_object_get(ct, "shard")), "tokens");
  ck_assert_str_eq(json_string_value(json_object_get(cc, "shard")), "chunks");
  ck_assert_ptr_null(json_object_get(json_object_get(ct, "impls"), "cp1"));
  ck_assert_ptr_null(json_object_get(json_object_get(cc, "impls"), "cp0"));
  ck_assert(shards_are(cc, chunks4, 4));
  json_decref(doc);
  unlink(path);
  unlink(js);
}
END_TEST

CKR_MAIN_FORK(CK_NOFORK, "check_shard", "check_shard", 300, plan_table, check_follows_declared_shard)
