/* No silent passes, each with its negative control:
 *   - check --oracle none on a fixture with /outputs refuses (exit 2, the
 *     message names the output); the same fixture with its oracle judges it
 *     (exit 0 correct, exit 1 planted);
 *   - --oracle none without /outputs: every output document is written, exit 0;
 *   - an output that declares no numerics is judged by its storage dtype's
 *     band whatever --matmul-precision / --dtype say: a 1e-3 error in one
 *     head fails under --matmul-precision default and --dtype bfloat16, a
 *     correct output passes under --dtype float64; attrs.numerics says
 *     "numerics not declared";
 *   - compute_dtype bfloat16 without matmul_precision is completed (the
 *     bfloat16 band), compute_dtype float32 without it is refused (exit 2);
 *   - (miss 5) a stored /oracle with a NaN, precision_bits -5,
 *     certified_bits 100000, 0 or 20 (too weak for float32) is recomputed
 *     and the results say why; the intact one is used;
 *   - (miss 2) freshness covers the attributes, and a forged /oracle (finite,
 *     sane bits, values off by 1e-4) fails the spot check and is recomputed:
 *     see freshness_covers_attributes;
 *   - finding (b): outputs below the format's range carry a "finding" that
 *     blames the range / flushing, not the kernel: see range_finding.
 * argv[1]: the folder of shipped fixtures. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fix.h"
#include "gdn_synth.h"
#include "kern.h"
#include "parity_sweep.h"
#include "parity_cli.h"
#include "report.h"
#include "../check_runner.h"
#include "../check_text.h"
#include "cli_inproc.h"
#include "synth_fixture.h"
#include "sweep_setup.h"

static char *data_dir;

typedef struct {
  int planted;            /* 1e-3 relative on every element of head 1's o */
  const char *dtype, *mm; /* declared numerics (NULL: absent) */
  int oracle_nan;         /* a NaN planted in the stored /oracle o */
  int64_t prec, cert;     /* stored precision_bits / certified_bits (-1: keep) */
  double scale;           /* a new root scale after the oracle was computed (0: keep) */
  int fresh_out;          /* x = our float64 kernel on the (new) problem, rounded, instead of the stored oracle */
  int old;                /* drop problem_sha256: a fixture written before it existed */
  int forge;              /* a forged /oracle: finite, sane bits, values off by 1e-4 */
} spec;

/* The shipped small fixture plus one output "x": its oracle rounded to float32. */
static void make_fixture(char *path, const spec *sp) {
  char src[1024];
  snprintf(src, sizeof src, "%s/small-b2-t100-hk2-hv4-d32-h0.h5", data_dir);
  fix_fixture fx;
  sfx_load(&fx, src);
  gdn_error e;
  gdn_error_init(&e);
  fix_output *slot;
  ck_assert_int_eq(fix_fixture_add_output(&fx, "x", &slot, &e), GDN_OK);
  const gdn_shape *s = &fx.inputs.shape;
  ck_assert_int_eq(gdn_outputs_alloc(&slot->out, s, GDN_DTYPE_F32, &e), GDN_OK);
  size_t no = gdn_shape_numel_v(s), nh = gdn_shape_numel_state(s);
  for (size_t i = 0; i < no; i++) {
    int64_t h = (int64_t)(i / (size_t)s->Dv) % s->Hv;
    slot->out.o[i] = (float)(fx.oracle.out.o[i] * (sp->planted && h == 1 ? 1 + 1e-3 : 1));
  }
  for (size_t i = 0; i < nh; i++) slot->out.ht[i] = (float)fx.oracle.out.ht[i];
  slot->has_ht = 1;
  if (sp->scale) fx.inputs.has_scale = 1, fx.inputs.scale = sp->scale;
  if (sp->old) fx.oracle.problem_sha256[0] = '\0';
  if (sp->fresh_out) {
    gdn_outputs f64;
    gdn_outputs_init(&f64);
    kern_config cfg;
    kern_config_init(&cfg);
    cfg.dtype = GDN_DTYPE_F64;
    cfg.chunk = fx.chunk_size;
    ck_assert_int_eq(gdn_outputs_alloc(&f64, s, GDN_DTYPE_F64, &e), GDN_OK);
    ck_assert_msg(kern_scan(&fx.inputs, &cfg, &f64, &e) == GDN_OK, "%s", e.msg);
    for (size_t i = 0; i < no; i++) slot->out.o[i] = (float)f64.o[i];
    for (size_t i = 0; i < nh; i++) slot->out.ht[i] = (float)f64.ht[i];
    gdn_outputs_clear(&f64);
  }
  if (sp->oracle_nan) fx.oracle.out.o[no / 2] = NAN;
  if (sp->forge) /* every 3rd element of o and ht off by 1e-4: finite, valid bits, wrong */
    for (size_t i = 0; i < no + nh; i += 3) *(i < no ? &fx.oracle.out.o[i] : &fx.oracle.out.ht[i - no]) *= 1 + 1e-4;
  if (sp->prec != -1) fx.oracle.precision_bits = sp->prec;
  if (sp->cert != -1) fx.oracle.certified_bits = sp->cert;
  ck_assert_int_eq(fix_set_string(&slot->implementation, "scan", &e), GDN_OK);
  ck_assert_int_eq(fix_set_string(&slot->platform, "test", &e), GDN_OK);
  slot->missing = FIX_ATTR_PREFIX | FIX_ATTR_DEVICES;
  if (sp->dtype) ck_assert_int_eq(fix_set_string(&slot->compute_dtype, sp->dtype, &e), GDN_OK);
  else slot->missing |= FIX_ATTR_COMPUTE_DTYPE;
  if (sp->mm) ck_assert_int_eq(fix_set_string(&slot->matmul_precision, sp->mm, &e), GDN_OK);
  else slot->missing |= FIX_ATTR_MATMUL_PRECISION;
  strcpy(path, "/tmp/gdn-verdicts-XXXXXX.h5");
  close(mkstemps(path, 3));
  ck_assert_msg(fix_write(&fx, path, &e) == GDN_OK, "%s", e.msg);
  fix_fixture_clear(&fx);
}

/* gdn-parity check --fixture PATH --devices 1,2 --json J [extra...]: the
 * status (2 for an error, with its message in msg), the document in *doc. */
static int check(const char *path, const char *const *extra, json_t **doc, char *msg, size_t n) {
  char js[] = "/tmp/gdn-verdicts-XXXXXX.json";
  close(mkstemps(js, 5));
  const char *av[32] = {"gdn-parity", "check", "--fixture", path, "--devices", "1,2", "--json", js, "--reproducible"};
  int ac = 9;
  for (int i = 0; extra && extra[i]; i++) av[ac++] = extra[i];
  av[ac] = NULL;
  gdn_error e;
  int st = cli_inproc((char **)av, &e);
  if (msg) snprintf(msg, n, "%s", e.msg);
  if (st < 0) st = 2;
  if (doc) *doc = NULL;
  if (doc && st != 2) ck_assert_msg(report_json_read(js, doc, &e) == GDN_OK, "%s", e.msg);
  unlink(js);
  return st;
}

START_TEST(oracle_none_refuses_outputs) {
  char path[64], msg[1024];
  for (int planted = 0; planted <= 1; planted++) {
    spec sp = {planted, "float32", "highest", 0, -1, -1, 0, 0, 0, 0};
    make_fixture(path, &sp);
    const char *none[] = {"--oracle", "none", NULL};
    ck_assert_int_eq(check(path, none, NULL, msg, sizeof msg), 2);
    ck_assert_msg(strstr(msg, "--oracle none cannot judge") && strstr(msg, "'x'"), "%s", msg);
    /* control: with the stored oracle it is judged */
    ck_assert_int_eq(check(path, NULL, NULL, msg, sizeof msg), planted ? 1 : 0);
    unlink(path);
  }
}
END_TEST

START_TEST(oracle_none_documents) {
  char src[1024], outs[4][40];
  snprintf(src, sizeof src, "%s/small-b2-t100-hk2-hv4-d32-h0.h5", data_dir);
  const char *sfx[4] = {".html", ".xml", ".md", ".json"};
  for (int i = 0; i < 4; i++) {
    snprintf(outs[i], sizeof outs[i], "/tmp/gdn-verdicts-XXXXXX%s", sfx[i]);
    close(mkstemps(outs[i], (int)strlen(sfx[i])));
  }
  const char *ex[] = {"--oracle", "none", "--report", outs[0], "--junit", outs[1], "--summary", outs[2], NULL};
  char msg[1024];
  ck_assert_msg(check(src, ex, NULL, msg, sizeof msg) == 0, "%s", msg);
  for (int i = 0; i < 3; i++) {
    FILE *f = fopen(outs[i], "r");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    ck_assert_msg(ftell(f) > 100, "%s is empty", outs[i]);
    fclose(f);
    unlink(outs[i]);
  }
  unlink(outs[3]);
}
END_TEST

static const char *numerics_note(json_t *doc) {
  json_t *c = json_array_get(json_object_get(doc, "cases"), 0);
  return json_string_value(json_object_get(json_object_get(json_object_get(json_object_get(c, "impls"), "x"), "attrs"), "numerics"));
}

START_TEST(command_line_numerics_do_not_apply) {
  char path[64], msg[1024];
  json_t *doc;
  spec bad = {1, NULL, NULL, 0, -1, -1, 0, 0, 0, 0}, good = {0, NULL, NULL, 0, -1, -1, 0, 0, 0, 0};
  make_fixture(path, &bad);
  /* control: with the case's own numerics the planted error fails too */
  ck_assert_int_eq(check(path, NULL, NULL, msg, sizeof msg), 1);
  const char *loose1[] = {"--matmul-precision", "default", NULL}, *loose2[] = {"--dtype", "bfloat16", NULL};
  ck_assert_int_eq(check(path, loose1, &doc, msg, sizeof msg), 1);
  ck_assert_ptr_nonnull(strstr(numerics_note(doc), "numerics not declared"));
  json_decref(doc);
  ck_assert_int_eq(check(path, loose2, NULL, msg, sizeof msg), 1);
  unlink(path);
  make_fixture(path, &good);
  const char *tight[] = {"--dtype", "float64", NULL};
  ck_assert_msg(check(path, tight, NULL, msg, sizeof msg) == 0, "correct float32 output under --dtype float64: %s", msg);
  ck_assert_int_eq(check(path, loose1, NULL, msg, sizeof msg), 0);
  unlink(path);
}
END_TEST

START_TEST(incomplete_declarations) {
  char path[64], msg[1024];
  json_t *doc;
  spec bf = {0, "bfloat16", NULL, 0, -1, -1, 0, 0, 0, 0}, f32 = {0, "float32", NULL, 0, -1, -1, 0, 0, 0, 0}, mm = {0, NULL, "highest", 0, -1, -1, 0, 0, 0, 0};
  make_fixture(path, &bf);
  ck_assert_msg(check(path, NULL, &doc, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_ptr_nonnull(strstr(numerics_note(doc), "completed as highest"));
  json_decref(doc);
  unlink(path);
  /* (an unknown name such as "fp32" is refused by the fixture schema already) */
  const spec *refused[] = {&f32, &mm};
  const char *needle[] = {"declares compute_dtype but not matmul_precision",
                          "declares matmul_precision but not compute_dtype"};
  for (int i = 0; i < 2; i++) {
    make_fixture(path, refused[i]);
    ck_assert_int_eq(check(path, NULL, NULL, msg, sizeof msg), 2);
    ck_assert_msg(strstr(msg, needle[i]) && strstr(msg, "/outputs/x"), "%s", msg);
    unlink(path);
  }
}
END_TEST

/* A broken /oracle is not trusted: it is recomputed, and the results say
 * why (inputs[].oracle_note); the correct output then passes on the fresh
 * oracle.  Control: the intact /oracle is used (oracle_from_fixture). */
START_TEST(broken_oracle_not_trusted) {
  char path[64], msg[1024];
  json_t *doc;
  spec sp[] = {{0, "float32", "highest", 0, -1, -1, 0, 0, 0, 0},    {0, "float32", "highest", 1, -1, -1, 0, 0, 0, 0},
               {0, "float32", "highest", 0, -5, -1, 0, 0, 0, 0},    {0, "float32", "highest", 0, -1, 100000, 0, 0, 0, 0},
               {0, "float32", "highest", 0, -1, 0, 0, 0, 0, 0},     {0, "float32", "highest", 0, -1, 20, 0, 0, 0, 0}};
  const char *why[] = {NULL, "o[", "precision_bits -5", "certified_bits 100000", "certified_bits 0",
                       "too weak to judge float32"};
  for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
    make_fixture(path, &sp[i]);
    ck_assert_msg(check(path, NULL, &doc, msg, sizeof msg) == 0, "case %zu: %s", i, msg);
    json_t *in0 = json_array_get(json_object_get(doc, "inputs"), 0);
    const char *note = json_string_value(json_object_get(in0, "oracle_note"));
    if (!why[i]) {
      ck_assert(json_is_true(json_object_get(in0, "oracle_from_fixture")));
      ck_assert_ptr_null(note);
    } else {
      ck_assert(json_is_false(json_object_get(in0, "oracle_from_fixture")));
      ck_assert_msg(note && strstr(note, why[i]) && strstr(note, "recomputed"), "case %zu: %s", i, note ? note : "(none)");
    }
    json_decref(doc);
    unlink(path);
  }
}
END_TEST

/* Freshness covers the attributes (miss 2): after the root scale changes,
 * the stored /oracle (of the old scale) is recomputed, an output of the old
 * scale fails and one of the new scale passes.  A fixture written before
 * problem_sha256 is recomputed with a note.  Control: the intact fixture's
 * oracle is used. */
START_TEST(freshness_covers_attributes) {
  char path[64], msg[1024];
  json_t *doc;
  const double s0 = 1.0 / sqrt(32.0);
  spec sp[] = {{0, "float32", "highest", 0, -1, -1, 0, 0, 0, 0},       /* intact */
               {0, "float32", "highest", 0, -1, -1, 0.5 * s0, 0, 0, 0}, /* new scale, old output */
               {0, "float32", "highest", 0, -1, -1, 0.5 * s0, 1, 0, 0}, /* new scale, new output */
               {0, "float32", "highest", 0, -1, -1, 0, 0, 1, 0},        /* before problem_sha256 */
               {0, "float32", "highest", 0, -1, -1, 0, 0, 0, 1}};       /* forged /oracle */
  const int want[] = {0, 1, 0, 0, 0};
  const char *why[] = {NULL, "problem_sha256 differs", "problem_sha256 differs", "freshness unknown",
                       "spot check failed: 4 recomputed state columns differ"};
  for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
    make_fixture(path, &sp[i]);
    ck_assert_msg(check(path, NULL, &doc, msg, sizeof msg) == want[i], "case %zu: %s", i, msg);
    json_t *in0 = json_array_get(json_object_get(doc, "inputs"), 0);
    const char *note = json_string_value(json_object_get(in0, "oracle_note"));
    ck_assert(json_is_boolean(json_object_get(in0, "oracle_from_fixture")));
    ck_assert_int_eq(json_is_true(json_object_get(in0, "oracle_from_fixture")), !why[i]);
    if (!why[i]) { /* the spot check ran and agreed */
      json_t *sc = json_object_get(in0, "oracle_spot_check");
      ck_assert_int_eq(json_integer_value(json_object_get(sc, "columns")), 4);
      ck_assert(json_real_value(json_object_get(sc, "rel")) < 1e-15);
    }
    if (why[i]) ck_assert_msg(note && strstr(note, why[i]), "case %zu: %s", i, note ? note : "(none)");
    json_decref(doc);
    unlink(path);
  }
}
END_TEST

/* Finding (b): v scaled to 1e-36 puts the exact o below 2^-126 / u; the
 * case then says the errors are the format's range (flushing with --ftz),
 * not a kernel defect.  Control: the same inputs unscaled carry no finding. */
static json_t *range_case(double vscale, int ftz, parity_doc *d) {
  gdn_error e;
  gdn_error_init(&e);
  /* static: the document borrows it; zero = initialised, and loading
   * clears the previous load (parity_policy_parse) */
  static parity_policy pol;
  ck_assert_int_eq(parity_policy_load_builtin(&pol, &e), GDN_OK);
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_shape s = {1, 256, 1, 1, 32, 32};
  gdn_synth_opts so = {3, 0, 0};
  ck_assert_int_eq(gdn_synth_generate(&in, &s, &so, &e), GDN_OK);
  for (size_t i = 0; i < gdn_shape_numel_v(&s); i++) in.v[i] = (float)(in.v[i] * vscale);
  parity_reference ref;
  parity_reference_init(&ref);
  ck_assert_int_eq(parity_reference_compute(&ref, &in, PARITY_ORACLE_DD, 128, &e), GDN_OK);
  parity_sweep_opts o;
  sws_opts(&o, &pol, 2);
  o.ftz = ftz;
  sws_run(d, &in, &ref, NULL, 0, &o);
  parity_reference_clear(&ref);
  gdn_inputs_clear(&in);
  return json_array_get(json_object_get(d->root, "cases"), 0);
}

START_TEST(range_finding) {
  parity_doc d;
  json_t *c = range_case(1e-36, 1, &d);
  const char *f = json_string_value(json_object_get(c, "finding"));
  ck_assert_msg(f && strstr(f, "flushed to zero by --ftz, which changes the mathematics") && strstr(f, "not a kernel defect"),
                "%s", f ? f : "(none)");
  parity_doc_clear(&d);
  c = range_case(1e-36, 0, &d);
  f = json_string_value(json_object_get(c, "finding"));
  ck_assert_msg(f && strstr(f, "fewer significant bits"), "%s", f ? f : "(none)");
  parity_doc_clear(&d);
  c = range_case(1, 1, &d);
  ck_assert_ptr_null(json_object_get(c, "finding"));
  ck_assert(json_is_true(json_object_get(c, "pass")));
  parity_doc_clear(&d);
}
END_TEST

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *t = calloc((size_t)n + 1, 1);
  ck_assert_uint_eq(fread(t, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return t;
}

/* The report's block map: the planted head sits in the worst case's map,
 * seams marked.  Control: without an oracle there is no map, and the
 * report says so. */
START_TEST(block_map_in_report) {
  char path[64], html[] = "/tmp/gdn-verdicts-XXXXXX.html", msg[1024];
  close(mkstemps(html, 5));
  spec bad = {1, "float32", "highest", 0, -1, -1, 0, 0, 0, 0};
  make_fixture(path, &bad);
  const char *ex[] = {"--report", html, NULL};
  json_t *doc;
  ck_assert_int_eq(check(path, ex, &doc, msg, sizeof msg), 1);
  json_t *c = json_array_get(json_object_get(doc, "cases"), 1); /* D = 2 */
  json_t *bm = json_object_get(c, "block_map");
  ck_assert_str_eq(json_string_value(json_object_get(bm, "subject")), "x");
  /* head 1 carries the planted 1e-3; heads 0, 2, 3 do not */
  ck_assert(json_real_value(json_array_get(json_array_get(json_object_get(bm, "values"), 1), 0)) > 5e-4);
  ck_assert(json_real_value(json_array_get(json_array_get(json_object_get(bm, "values"), 0), 0)) < 1e-6);
  json_decref(doc);
  char *t = slurp(html);
  CKT_HAS_ALL(t, "id=\"svg-blockmap\"", "class=\"seam\"", ", subject x:");
  free(t);
  unlink(path);
  char src[1024];
  snprintf(src, sizeof src, "%s/small-b2-t100-hk2-hv4-d32-h0.h5", data_dir);
  const char *none[] = {"--oracle", "none", "--report", html, NULL};
  ck_assert_int_eq(check(src, none, NULL, msg, sizeof msg), 0);
  t = slurp(html);
  ck_assert_ptr_null(strstr(t, "id=\"svg-blockmap\""));
  ck_assert_ptr_nonnull(strstr(t, "No case has a block map"));
  free(t);
  unlink(html);
}
END_TEST

CKR_MAIN_ARGS("test_verdicts FIXTURE-DATA-DIR", 1, (&data_dir), "verdicts", "verdicts", 300,
    oracle_none_refuses_outputs, oracle_none_documents, command_line_numerics_do_not_apply, incomplete_declarations,
    broken_oracle_not_trusted, freshness_covers_attributes, range_finding, block_map_in_report)
