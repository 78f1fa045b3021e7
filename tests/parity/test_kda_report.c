/* The reports of a recurrence document (reports/report_recur.h):
 * `gdn-parity --recurrence kda` with --report/--junit/--summary, and
 * `gdn-parity report KDA.json` rebuilding them.
 *   - a PASS run: every view names the recurrence, its gate shape, the
 *     oracle's certified bits, each case's subject/chunk/devices, its o and
 *     ht errors (the JSON's numbers as the reports print them) and kappa_G's
 *     worst channel; nothing of a failure;
 *   - a --mutant run (FAIL): the failing output with the largest err / band
 *     (found here from the JSON, independently of the writers) is named at
 *     the top of the HTML and the Markdown and in the JUnit failure; --grad
 *     with a backward mutant names dg;
 *   - `report` rebuilds every file byte for byte (forward, --grad, sweep,
 *     coverage, check); negative control: a number changed in the saved
 *     document changes the rebuilt page, and a case marked pass over its
 *     band is refused;
 *   - malformed documents: exit 2 naming the field, and no file written. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <sys/stat.h>

#include "../check_runner.h"
#include "../check_text.h"
#include "cli_inproc.h"
#include "cli_run.h"
#include "report_num.h"

static char *exe, *fexe;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "%s missing", path);
  char *buf = malloc(1 << 20);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static int exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

/* The four outputs of base in folder dir. */
typedef struct outs {
  char json[512], html[512], xml[512], md[512];
} outs;

static outs outs_in(const char *dir, const char *base) {
  outs o;
  snprintf(o.json, sizeof o.json, "%s/%s.json", dir, base);
  snprintf(o.html, sizeof o.html, "%s/%s.html", dir, base);
  snprintf(o.xml, sizeof o.xml, "%s/%s.xml", dir, base);
  snprintf(o.md, sizeof o.md, "%s/%s.md", dir, base);
  return o;
}

/* av (NULL-terminated, at most 20) with the four outputs and --quiet added; the status. */
static int run_with(char **av, const outs *o, gdn_error *e) {
  char *a[32];
  int n = 0;
  while (av[n]) a[n] = av[n], n++;
  char *add[] = {"--json", (char *)o->json, "--report", (char *)o->html, "--junit", (char *)o->xml,
                 "--summary", (char *)o->md, "--quiet", NULL};
  for (int i = 0; add[i]; i++) a[n++] = add[i];
  a[n] = NULL;
  return cli_inproc(a, e);
}

/* `report` of o->json into dir/re/ (same names: the Markdown's link is the
 * same), each file compared with the run's; the status. */
static int rebuilt_identical(const outs *o, const char *base) {
  char re[512];
  snprintf(re, sizeof re, "%s/re", cli_dir);
  mkdir(re, 0700);
  outs r = outs_in(re, base);
  char *av[] = {"gdn-parity", "report", (char *)o->json, "--report", r.html, "--junit", r.xml, "--summary", r.md,
                "--quiet", NULL};
  gdn_error e;
  const int st = cli_inproc(av, &e);
  ck_assert_msg(st == 0 || st == 1, "report: %s", e.msg);
  const char *a[3] = {o->html, o->xml, o->md}, *b[3] = {r.html, r.xml, r.md};
  for (int i = 0; i < 3; i++) {
    char *x = slurp(a[i]), *y = slurp(b[i]);
    ck_assert_msg(!strcmp(x, y), "%s is not %s byte for byte", b[i], a[i]);
    free(x);
    free(y);
  }
  return st;
}

static char *kda_av[] = {"gdn-parity", "--shape", "1,32,2,8", "--key-heads", "1", "--recurrence", "kda",
                         "--chunk", "16", "--devices", "1,2", NULL, NULL, NULL, NULL};

/* x formatted as the reports print errors and bands (3 significant digits). */
static const char *num(double x, char buf[REPORT_NUM_CHARS]) {
  report_num_format(buf, x, 3);
  return buf;
}

static double field(const json_t *c, const char *out, const char *k) {
  return json_real_value(json_object_get(json_object_get(c, out), k));
}

START_TEST(pass_report_names_everything) {
  cli_scratch_make();
  outs o = outs_in(cli_dir, "k");
  gdn_error e;
  ck_assert_msg(run_with(kda_av, &o, &e) == 0, "%s", e.msg);
  char *h = slurp(o.html), *x = slurp(o.xml), *m = slurp(o.md);
  json_t *d = json_load_file(o.json, 0, NULL);
  ck_assert_ptr_nonnull(d);
  CKT_HAS_ALL(h, "recurrence kda", "head-token-channel", "kda-recurrent", "kda-chunk", "kda-affine-prefix",
              "<strong>PASS</strong>", "id=\"cases-0\"");
  CKT_HAS_ALL(m, "recurrence kda", "head-token-channel", ": PASS", "kda-affine-prefix C=16 D=2", "[the HTML report](k.html)");
  CKT_HAS_ALL(x, "tests=\"4\" failures=\"0\"", "name=\"kda-affine-prefix C=16 D=2\"", "gdn-parity.recurrence.kda");
  char cert[64];
  snprintf(cert, sizeof cert, "certified %lld bits",
           (long long)json_integer_value(json_object_get(json_object_get(d, "oracle"), "certified_bits")));
  CKT_HAS_ALL(h, cert);
  CKT_HAS_ALL(m, cert);
  /* every case's numbers, as printed */
  json_t *cases = json_object_get(d, "cases");
  ck_assert_int_eq(json_array_size(cases), 4); /* token, chunk 16, affine D = 1, 2 */
  for (size_t i = 0; i < json_array_size(cases); i++) {
    const json_t *c = json_array_get(cases, i);
    char a[REPORT_NUM_CHARS], b[REPORT_NUM_CHARS], want[128];
    snprintf(want, sizeof want, "o %s, ht %s", num(field(c, "o", "err"), a), num(field(c, "ht", "err"), b));
    CKT_HAS_ALL(m, want);
    snprintf(want, sizeof want, "<td class=\"num\">%s</td><td class=\"num\">%s</td>", a, b);
    CKT_HAS_ALL(h, want);
    const json_t *k = json_object_get(c, "kappa_g");
    if (json_is_object(k)) {
      snprintf(want, sizeof want, "%s on channel %lld", num(json_real_value(json_object_get(k, "value")), a),
               (long long)json_integer_value(json_object_get(k, "worst_channel")));
      CKT_HAS_ALL(h, want);
      CKT_HAS_ALL(m, want);
    }
  }
  /* negative control of the checks above: nothing of a failure in a PASS */
  CKT_HAS_NONE(h, "id=\"deciding\"", "FAIL", "PLANTED MUTANT");
  CKT_HAS_NONE(m, "Failing", "FAIL", "PLANTED MUTANT");
  CKT_HAS_NONE(x, "<failure");
  ck_assert_int_eq(rebuilt_identical(&o, "k"), 0);
  json_decref(d);
  free(h), free(x), free(m);
  cli_scratch_remove();
}
END_TEST

/* A mode that moves the band (--matmul-precision high, --grad): every view
 * says why, the forward's and the backward's reasons as the JSON gives
 * them (in words free of escapes), JUnit as the suite's properties, and
 * HTML's band row defers to the mode's rule, not float32's; the
 * rebuild is byte for byte.  Negative control: float32's own band (the
 * IEEE run) has no such line in any view. */
START_TEST(mode_band_reason_in_every_view) {
  cli_scratch_make();
  outs o = outs_in(cli_dir, "hi"), p = outs_in(cli_dir, "ieee");
  char *av[16];
  memcpy(av, kda_av, sizeof kda_av);
  av[11] = "--grad";
  av[12] = "--matmul-precision";
  av[13] = "high";
  gdn_error e;
  ck_assert_msg(run_with(av, &o, &e) == 0, "%s", e.msg);
  json_t *d = json_load_file(o.json, 0, NULL);
  ck_assert_ptr_nonnull(d);
  const char *f = json_string_value(json_object_get(d, "band_reason")),
             *g = json_string_value(json_object_get(json_object_get(d, "grad"), "band_reason"));
  ck_assert_msg(f && g && strstr(f, "each product keeps about 16 bits") &&
                    strstr(g, "each product of the backward keeps about 16 bits"),
                "%s | %s", f ? f : "(none)", g ? g : "(none)");
  char *h = slurp(o.html), *x = slurp(o.xml), *m = slurp(o.md);
  CKT_HAS_ALL(h, "<th>band moved by the mode</th>", "<th>backward band moved by the mode</th>",
              "<td>set by the mode per case (the next row says how)</td>",
              "each product keeps about 16 bits", "each product of the backward keeps about 16 bits");
  CKT_HAS_ALL(m, "- band moved by the mode: float32 with 3-pass bf16 matmuls (high): each product keeps",
              "- backward band moved by the mode: float32 with 3-pass bf16 matmuls (high): each product of the");
  CKT_HAS_ALL(x, "<properties>", "<property name=\"band_reason\" value=\"float32 with 3-pass bf16 matmuls (high)",
              "<property name=\"grad_band_reason\" value=\"float32 with 3-pass bf16 matmuls (high): each product of");
  ck_assert_int_eq(rebuilt_identical(&o, "hi"), 0);
  free(h), free(x), free(m);
  av[12] = NULL;
  ck_assert_msg(run_with(av, &p, &e) == 0, "%s", e.msg);
  h = slurp(p.html), x = slurp(p.xml), m = slurp(p.md);
  CKT_HAS_NONE(h, "band moved by the mode", "set by the mode");
  CKT_HAS_ALL(h, "<td>per case: u (8 kappa_G + 64)");
  CKT_HAS_NONE(m, "band moved by the mode");
  CKT_HAS_NONE(x, "<properties>", "band_reason");
  free(h), free(x), free(m);
  json_decref(d);
  cli_scratch_remove();
}
END_TEST

/* The failing output with the largest err / band, from the JSON alone. */
typedef struct worst {
  const json_t *c;
  const char *out;
  double err, band;
} worst;

static worst find_worst(const json_t *sec, int backward) {
  static const char *const fw[] = {"o", "ht", NULL}, *const bw[] = {"dq", "dk", "dv", "dg", "dbeta", "dh0", NULL};
  const json_t *owner = backward ? json_object_get(sec, "grad") : sec;
  worst w = {NULL, NULL, 0, 1};
  for (size_t i = 0; i < json_array_size(json_object_get(owner, "cases")); i++) {
    const json_t *c = json_array_get(json_object_get(owner, "cases"), i);
    const json_t *bj = json_object_get(c, "band") ? json_object_get(c, "band") : json_object_get(owner, "band");
    const double band = json_real_value(bj);
    for (const char *const *n = backward ? bw : fw; *n; n++) {
      const double err = field(c, *n, "err");
      if (err > band && (!w.out || err / band > w.err / w.band)) w = (worst){c, *n, err, band};
    }
  }
  return w;
}

/* A failing run: the deciding output named at the top of every view. */
static void failing_run(const char *mutant, int grad) {
  cli_scratch_make();
  outs o = outs_in(cli_dir, "f");
  char *av[16];
  memcpy(av, kda_av, sizeof kda_av);
  int n = 11;
  if (grad) av[n++] = "--grad";
  av[n++] = "--mutant";
  av[n++] = (char *)mutant;
  av[n] = NULL;
  gdn_error e;
  ck_assert_msg(run_with(av, &o, &e) == 1, "%s", e.msg);
  json_t *d = json_load_file(o.json, 0, NULL);
  ck_assert_ptr_nonnull(d);
  const worst w = find_worst(d, grad);
  ck_assert_ptr_nonnull(w.out);
  char a[REPORT_NUM_CHARS], b[REPORT_NUM_CHARS], top[256], msg[256], pm[128], label[128] = "";
  const json_t *C = json_object_get(w.c, "chunk"), *D = json_object_get(w.c, "devices");
  snprintf(label, sizeof label, "%s", json_string_value(json_object_get(w.c, "subject")));
  if (json_is_integer(C))
    snprintf(label + strlen(label), sizeof label - strlen(label), " C=%lld", (long long)json_integer_value(C));
  if (json_is_integer(D))
    snprintf(label + strlen(label), sizeof label - strlen(label), " D=%lld", (long long)json_integer_value(D));
  snprintf(top, sizeof top, "%s%s: %s err %s &gt; band %s", label, grad ? " backward" : "", w.out,
           num(w.err, a), num(w.band, b));
  snprintf(msg, sizeof msg, "message=\"%s err %s &gt; band %s\"", w.out, a, b);
  snprintf(pm, sizeof pm, "PLANTED MUTANT %s", mutant);
  char *h = slurp(o.html), *x = slurp(o.xml), *m = slurp(o.md);
  char strong[300], bold[300], fails[64];
  snprintf(strong, sizeof strong, "Failing: <strong>%s", top);
  snprintf(bold, sizeof bold, "**Failing**: %s", top);
  snprintf(fails, sizeof fails, "failures=\"%lld\"", (long long)json_integer_value(json_object_get(d, "n_failed")));
  CKT_HAS_ALL(h, "recurrence kda", "<strong>FAIL</strong>", "id=\"deciding\"", strong, pm);
  CKT_HAS_ALL(m, ": FAIL", bold, pm);
  CKT_HAS_ALL(x, fails, msg, "type=\"band\"");
  /* the deciding failure comes before the first table */
  ck_assert(strstr(h, "id=\"deciding\"") < strstr(h, "<table"));
  if (grad) CKT_HAS_ALL(h, "id=\"grad-cases-0\"", "<th>dg err</th>");
  ck_assert_int_eq(rebuilt_identical(&o, "f"), 1);
  json_decref(d);
  free(h), free(x), free(m);
  cli_scratch_remove();
}

START_TEST(mutant_report_names_the_failing_output) { failing_run("gate-value-axis", 0); }
END_TEST

START_TEST(grad_mutant_report_names_dg) { failing_run("dg-value-axis", 1); }
END_TEST

/* doc with the value at path ("cases/1/o/err") replaced by the JSON text
 * val, or removed (val NULL), written to out. */
static void edit_write(const char *src, const char *path, const char *val, const char *out) {
  json_t *d = json_load_file(src, 0, NULL), *p = d;
  ck_assert_ptr_nonnull(d);
  char buf[256], *save = NULL, *last = NULL;
  snprintf(buf, sizeof buf, "%s", path);
  json_t *parent = NULL;
  for (char *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
    parent = p;
    last = t;
    p = json_is_array(p) ? json_array_get(p, (size_t)atoi(t)) : json_object_get(p, t);
  }
  ck_assert_msg(parent && json_is_object(parent), "%s", path);
  if (val) json_object_set_new(parent, last, json_loads(val, JSON_DECODE_ANY, NULL));
  else json_object_del(parent, last);
  ck_assert_int_eq(json_dump_file(d, out, JSON_INDENT(2) | JSON_SORT_KEYS), 0);
  json_decref(d);
}

/* Each malformed document: `report` refuses it (GDN_ERR_INPUT: exit 2)
 * naming the field, and writes nothing. */
static const struct {
  const char *path, *val, *want;
} malformed[] = {
    {"cases/1/o/err", NULL, "cases[1].o.err: missing or not a number"},
    {"recurrence", "7", "recurrence: missing or not a string"},
    {"grad/cases/0/dg", "\"x\"", "grad.cases[0].dg: missing or not an object"},
    {"version", "2", "version: only version 1 is known"},
    {"n_failed", "3", "n_failed: 3, but 0 cases fail"},
    {"oracle/certified_bits", NULL, "oracle.certified_bits: missing or not an integer"},
    {"cases/0/chunk", "\"64\"", "cases[0].chunk: missing or not an integer or null"},
    {"cases/2/kappa_g/worst_channel", "1.5", "cases[2].kappa_g.worst_channel: missing or not an integer"},
    {"gate_shape", NULL, "gate_shape: missing or not a string"},
    {"band_reason", "3", "band_reason: not a string"},
    {"grad/band_reason", "[]", "grad.band_reason: not a string"},
    /* a verdict that contradicts its numbers: PASS over the band */
    {"cases/1/o/err", "0.5", "cases[1].pass: true, but o.err 0.5 is over its band"},
    {"grad/cases/3/pass", "false", "n_failed: 0, but 1 cases fail"},
};

START_TEST(malformed_documents_refused) {
  cli_scratch_make();
  outs o = outs_in(cli_dir, "g");
  char *av[16];
  memcpy(av, kda_av, sizeof kda_av);
  av[11] = "--grad";
  av[12] = NULL;
  gdn_error e;
  ck_assert_msg(run_with(av, &o, &e) == 0, "%s", e.msg);
  char bad[512], html[512];
  snprintf(bad, sizeof bad, "%s/bad.json", cli_dir);
  snprintf(html, sizeof html, "%s/bad.html", cli_dir);
  for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
    edit_write(o.json, malformed[i].path, malformed[i].val, bad);
    char *rv[] = {"gdn-parity", "report", bad, "-o", html, NULL};
    ck_assert_int_eq(cli_inproc(rv, &e), -1);
    ck_assert_int_eq(e.code, GDN_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, malformed[i].want) && strstr(e.msg, bad), "%s: %s", malformed[i].path, e.msg);
    ck_assert_msg(!exists(html), "%s: a report was written", malformed[i].path);
  }
  /* the built program's exit status for one of them */
  edit_write(o.json, "cases/1/o/err", NULL, bad);
  cli_result *r = malloc(sizeof *r);
  char *rv[] = {exe, "report", bad, "-o", html, NULL};
  cli_run(r, rv);
  ck_assert_int_eq(r->status, 2);
  ck_assert_msg(strstr(r->err, "cases[1].o.err"), "%s", r->err);
  free(r);
  /* negative control: the unedited document is accepted */
  char *ok[] = {"gdn-parity", "report", o.json, "-o", html, "--quiet", NULL};
  ck_assert_msg(cli_inproc(ok, &e) == 0, "%s", e.msg);
  cli_scratch_remove();
}
END_TEST

/* Negative control of the byte comparison: a saved number changed (within
 * the band, so the verdict stands) changes the rebuilt page, which prints it. */
START_TEST(changed_number_changes_the_rebuild) {
  cli_scratch_make();
  outs o = outs_in(cli_dir, "k");
  gdn_error e;
  ck_assert_msg(run_with(kda_av, &o, &e) == 0, "%s", e.msg);
  json_t *d = json_load_file(o.json, 0, NULL);
  const double err = field(json_array_get(json_object_get(d, "cases"), 1), "o", "err");
  json_decref(d);
  char val[64], edited[512], html[512];
  snprintf(val, sizeof val, "%.17g", err * 1.5);
  snprintf(edited, sizeof edited, "%s/edited.json", cli_dir);
  snprintf(html, sizeof html, "%s/edited.html", cli_dir);
  edit_write(o.json, "cases/1/o/err", val, edited);
  char *rv[] = {"gdn-parity", "report", edited, "-o", html, "--quiet", NULL};
  ck_assert_msg(cli_inproc(rv, &e) == 0, "%s", e.msg);
  char *a = slurp(o.html), *b = slurp(html), n[REPORT_NUM_CHARS];
  ck_assert_msg(strcmp(a, b) != 0, "the rebuilt page ignores the changed number");
  CKT_HAS_ALL(b, num(err * 1.5, n));
  free(a), free(b);
  cli_scratch_remove();
}
END_TEST

static const char *write_grid(void) {
  static char p[512];
  snprintf(p, sizeof p, "%s/grid.json", cli_dir);
  FILE *f = fopen(p, "w");
  fputs("{\"name\": \"tiny\", \"recurrence\": \"kda\", \"entries\": [{\"shape\": \"1,32,2,8\", \"key_heads\": 1, "
        "\"chunk\": [16], \"devices\": [2]}, {\"shape\": \"1,16,1,8\", \"chunk\": [8], \"devices\": [2], \"h0\": "
        "true, \"seed\": 3}]}",
        f);
  fclose(f);
  return p;
}

/* sweep, coverage and check take the reports too, and `report` rebuilds them. */
START_TEST(sweep_coverage_check_reports) {
  cli_scratch_make();
  gdn_error e;
  const char *grid = write_grid();
  outs s = outs_in(cli_dir, "s");
  char *sw[] = {"gdn-parity", "sweep", "--recurrence", "kda", "--grid", (char *)grid, NULL};
  ck_assert_msg(run_with(sw, &s, &e) == 0, "%s", e.msg);
  char *h = slurp(s.html);
  CKT_HAS_ALL(h, "grid sweep", "entry 1 (B=1 T=16 Hk=1 Hv=1 Dk=8 Dv=8, seed 3, h0)", "id=\"cases-1\"");
  free(h);
  ck_assert_int_eq(rebuilt_identical(&s, "s"), 0);
  outs c = outs_in(cli_dir, "c");
  char *cv[] = {"gdn-parity", "coverage", "--recurrence", "kda", "--grid", (char *)grid, "--mutants",
                "gate-value-axis,cumsum-across-chunks", NULL};
  ck_assert_msg(run_with(cv, &c, &e) == 0, "%s", e.msg);
  h = slurp(c.html);
  char *x = slurp(c.xml);
  CKT_HAS_ALL(h, "id=\"mutants\"", "gate-value-axis", "cumsum-across-chunks", "2 of 2 mutants killed");
  CKT_HAS_ALL(x, "tests=\"2\" failures=\"0\"", "name=\"mutant cumsum-across-chunks\"");
  free(h), free(x);
  ck_assert_int_eq(rebuilt_identical(&c, "c"), 0);
  /* check of a KDA fixture */
  char fx[512];
  snprintf(fx, sizeof fx, "%s/f.h5", cli_dir);
  char *sv[] = {fexe, "synth", "--recurrence", "kda", "--shape", "1,32,2,8", "--key-heads", "1", "--kernel-outputs",
                "2", "--out", fx, NULL};
  cli_result *r = malloc(sizeof *r);
  cli_run(r, sv);
  ck_assert_msg(r->status == 0, "%s", r->err);
  free(r);
  outs k = outs_in(cli_dir, "ch");
  char *kv[] = {"gdn-parity", "check", fx, "--chunk", "16", "--devices", "2", NULL};
  ck_assert_msg(run_with(kv, &k, &e) == 0, "%s", e.msg);
  /* an output over the fixture read, and a report into a missing folder: refused before any work, nothing written */
  char *over[] = {"gdn-parity", "check", fx, "--summary", fx, NULL};
  ck_assert_int_eq(cli_inproc(over, &e), -1);
  ck_assert_msg(e.code == GDN_ERR_INPUT && strstr(e.msg, "--summary"), "%s", e.msg);
  char nj[512];
  snprintf(nj, sizeof nj, "%s/never.json", cli_dir);
  char *missing[] = {"gdn-parity", "--shape", "1,32,2,8", "--recurrence", "kda", "--json", nj, "--report",
                     "/nonexistent-gdn/r.html", NULL};
  ck_assert_int_eq(cli_inproc(missing, &e), -1);
  ck_assert_msg(e.code == GDN_ERR_INPUT && strstr(e.msg, "--report"), "%s", e.msg);
  ck_assert(!exists(nj));
  h = slurp(k.html);
  CKT_HAS_ALL(h, "check", fx, "output:kernel-affine-prefix-d2", "<strong>PASS</strong>");
  free(h);
  ck_assert_int_eq(rebuilt_identical(&k, "ch"), 0);
  cli_scratch_remove();
}
END_TEST

CKR_MAIN_ARGS("test_kda_report GDN_PARITY_EXE GDN_FIXTURE_EXE", 2, (&exe, &fexe), "kda_report", "reports", 120,
              pass_report_names_everything, mutant_report_names_the_failing_output, grad_mutant_report_names_dg,
              malformed_documents_refused, changed_number_changes_the_rebuild, sweep_coverage_check_reports,
              mode_band_reason_in_every_view)
