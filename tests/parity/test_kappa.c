/* kappa_G and the bands that follow it (docs/results-json.md, schema 2).
 *
 * parity_kappa_g is checked on hand-made gates (the float32 rounding of the
 * cumsum included: a binary64 sum gives a different answer), the policy's
 * "kappa_g_u" on a hand-made view (the constant band while kappa_G u_G is
 * below it, the widened one above, u_G = 2^-53 for float64), and the whole
 * gate on the case of the finding: g = -80 on 5 % of tokens, slow gates
 * elsewhere (B1 T1024 H2 D64, C = 64, D = 2, dd oracle).  There the stock
 * float32 scan is above its constant 64u band in every matmul mode (the
 * finding: it is the algorithm's own error); the case passes with the band
 * max(64u, kappa_G u) and says so in cases[].finding; a planted error
 * larger than the widened band still fails it (negative control); with
 * ordinary gates every check's limit is exactly the one of the policy
 * without "kappa_g_u". */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_synth.h"
#include "kern.h"
#include "parity_kappa.h"
#include "parity_sweep.h"
#include "report_html.h"
#include "report_junit.h"
#include "report_markdown.h"
#include "../check_runner.h"
#include "doc_checks.h"
#include "sweep_setup.h"

static void inputs_1d(gdn_inputs *in, const float *g, int64_t T) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_shape s = {1, T, 1, 1, 2, 2};
  gdn_inputs_init(in);
  ck_assert_int_eq(gdn_inputs_alloc(in, &s, 0, &e), GDN_OK);
  for (int64_t t = 0; t < T; t++) in->g[t] = g[t];
}

/* parity_kappa.h's definitions taken literally, O(T C) per row: s_i as the
 * sum over j < i (not the recurrence), W_j as exp of the sum of the later
 * gates; G summed in float32 (f32 = 1, as the stock algorithm) or binary64. */
static parity_kappa direct(const gdn_inputs *in, int64_t C, int f32) {
  const gdn_shape *S = &in->shape;
  double sq = 0, ht = 0;
  double *G = calloc((size_t)S->T, sizeof *G), *m = calloc((size_t)S->T, sizeof *m);
  for (int64_t b = 0; b < S->B; b++)
    for (int64_t h = 0; h < S->Hv; h++) {
      for (int64_t t0 = 0; t0 < S->T; t0 += C) {
        float gf = 0;
        double gd = 0;
        for (int64_t t = t0; t < t0 + C && t < S->T; t++) {
          float g = gdn_inputs_token_kind(in, b, t) == GDN_TOKEN_PAD ? 0.0f : gdn_inputs_g(in, b, t, h);
          gf = t == t0 ? g : gf + g;
          gd = t == t0 ? g : gd + g;
          G[t] = f32 ? gf : gd;
          double sm = exp(G[t]);
          for (int64_t j = t0; j < t; j++) sm += exp(G[t] - G[j]);
          m[t] = fabs(G[t]) * sm / (1 + sm);
          sq += m[t] * m[t];
        }
      }
      double A = 0, B = 0;
      for (int64_t j = 0; j < S->T; j++) {
        double later = 0;
        for (int64_t k = j + 1; k < S->T; k++)
          later += gdn_inputs_token_kind(in, b, k) == GDN_TOKEN_PAD ? 0.0 : gdn_inputs_g(in, b, k, h);
        A += exp(later) * m[j];
        B += exp(later);
      }
      if (A / B > ht) ht = A / B;
    }
  free(G);
  free(m);
  return (parity_kappa){sqrt(sq / (double)(S->B * S->T * S->Hv)), ht};
}

static void close_to(double a, double b) { ck_assert_msg(fabs(a - b) <= 1e-12 * fabs(b), "%.17g vs %.17g", a, b); }

START_TEST(kappa_matches_definition) {
  gdn_inputs in;
  const float g[5] = {-1, -2, -3, -4, -5};
  inputs_1d(&in, g, 5);
  /* by hand, chunks of 2: m = 0.268941, 0.468625 | 0.142278, 0.132051 | 0.033464, RMS 0.257189 */
  parity_kappa k = parity_kappa_g(&in, 2);
  ck_assert_msg(fabs(k.o - 0.257189) < 1e-6, "%.8g", k.o);
  close_to(k.o, direct(&in, 2, 1).o);
  close_to(k.ht, direct(&in, 2, 1).ht);
  parity_kappa k5 = parity_kappa_g(&in, 5);
  ck_assert(k5.o > k.o); /* the cumsum restarts every chunk: longer chunks, larger |G| */
  ck_assert(isnan(parity_kappa_g(&in, 0).o));
  /* padding (segment id 0) has g = 0, as the kernels and MaxText set it */
  gdn_error e;
  gdn_error_init(&e);
  in.seg = gdn_calloc(5, sizeof *in.seg, "seg", &e);
  for (int t = 0; t < 5; t++) in.seg[t] = t == 3 ? 0 : 1;
  parity_kappa kp = parity_kappa_g(&in, 5);
  close_to(kp.o, direct(&in, 5, 1).o);
  ck_assert(kp.o != k5.o);
  gdn_inputs_clear(&in);
  /* synthetic gates, both kinds, a partial last chunk, GQA heads */
  gdn_shape s = {2, 300, 1, 2, 8, 8};
  for (unsigned fl = 0; fl < 2; fl++) {
    gdn_inputs_init(&in);
    gdn_synth_opts so = {3, fl ? GDN_SYNTH_SLOW_GATES : 0, 0};
    ck_assert_int_eq(gdn_synth_generate(&in, &s, &so, &e), GDN_OK);
    parity_kappa a = parity_kappa_g(&in, 64), d = direct(&in, 64, 1);
    close_to(a.o, d.o);
    close_to(a.ht, d.ht);
    gdn_inputs_clear(&in);
  }
}
END_TEST

/* kappa accumulated over head groups (a run streamed by head group): the
 * groups' inputs drawn alone (gdn_synth_generate_heads), added in either
 * order or merged from separate accumulators, give the whole inputs'
 * kappa bit for bit (B = 2, GQA, group sizes 1..3, both gate kinds, and
 * packed documents).  Negative control: leaving a group out changes it. */
START_TEST(kappa_over_head_groups) {
  const gdn_shape s = {2, 700, 3, 6, 8, 8};
  gdn_error e;
  gdn_error_init(&e);
  static parity_kappa_acc acc, part, other;
  for (unsigned fl = 0; fl < 2; fl++) {
    gdn_synth_opts so = {5, fl ? GDN_SYNTH_SLOW_GATES : 0, 0};
    gdn_inputs w;
    gdn_inputs_init(&w);
    ck_assert_int_eq(gdn_synth_generate(&w, &s, &so, &e), GDN_OK);
    ck_assert_int_eq(gdn_synth_segments(&w, 5, fl ? 4 : 1, &e), GDN_OK);
    const parity_kappa want = parity_kappa_g(&w, 64);
    for (int64_t gs = 1; gs <= 3; gs++) {
      parity_kappa_acc_init(&acc);
      parity_kappa_acc_init(&other);
      for (int64_t k1 = s.Hk; k1 > 0; k1 -= gs) { /* backwards: the last group first */
        const int64_t k0 = k1 - gs > 0 ? k1 - gs : 0;
        gdn_inputs g;
        gdn_inputs_init(&g);
        ck_assert_int_eq(gdn_synth_generate_heads(&g, &s, k0, k1, &so, &e), GDN_OK);
        ck_assert_int_eq(gdn_synth_segments(&g, 5, fl ? 4 : 1, &e), GDN_OK);
        parity_kappa_acc_init(&part);
        parity_kappa_acc_add(&part, &g, 64);
        parity_kappa_acc_merge(&acc, &part);
        if (k0 > 0) parity_kappa_acc_add(&other, &g, 64); /* all but the first group */
        gdn_inputs_clear(&g);
      }
      const parity_kappa got = parity_kappa_acc_value(&acc), less = parity_kappa_acc_value(&other);
      ck_assert_msg(!memcmp(&got.o, &want.o, sizeof got.o) && !memcmp(&got.ht, &want.ht, sizeof got.ht),
                    "gates %u, groups of %lld: %a %a vs %a %a", fl, (long long)gs, got.o, got.ht, want.o, want.ht);
      ck_assert(less.o != want.o);
    }
    gdn_inputs_clear(&w);
  }
}
END_TEST

/* G is summed in float32: 1 + 2^-24 rounds to 1 (ties to even) twice, so
 * G = -1, -1, -1; the binary64 sum (the negative control) differs. */
START_TEST(kappa_float32_rounding) {
  gdn_inputs in;
  const float g[3] = {-1.0f, -0x1p-24f, -0x1p-24f};
  inputs_1d(&in, g, 3);
  parity_kappa k = parity_kappa_g(&in, 3), d32 = direct(&in, 3, 1), d64 = direct(&in, 3, 0);
  ck_assert(k.o == d32.o || fabs(k.o - d32.o) <= 1e-15 * d32.o);
  ck_assert(fabs(d64.o - d32.o) > 1e-8 * d32.o);
  const float gn[2] = {-1.0f, NAN};
  gdn_inputs_clear(&in);
  inputs_1d(&in, gn, 2);
  ck_assert(isnan(parity_kappa_g(&in, 2).o) && isnan(parity_kappa_g(&in, 2).ht));
  gdn_inputs_clear(&in);
}
END_TEST

static const char *rule_text(const char *extra) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "{\"name\":\"t\",\"rules\":[{\"id\":\"b\",\"kind\":\"absolute\",\"metric\":\"rel_fro\",\"limit_u\":64,%s"
           "\"reason\":\"r\"}]}",
           extra);
  return buf;
}

/* The limit of the one check of a one-rule policy on a scan with rel_fro x. */
static parity_check judge_one(const char *policy, gdn_dtype dt, double kappa, double x) {
  gdn_error e;
  gdn_error_init(&e);
  parity_policy p;
  parity_policy_init(&p);
  ck_assert_msg(parity_policy_parse(&p, policy, "test", &e) == GDN_OK, "%s", e.msg);
  parity_metrics m;
  memset(&m, 0, sizeof m);
  m.rel_fro = x;
  parity_subject s;
  memset(&s, 0, sizeof s);
  s.name = "scan";
  s.kind = PARITY_SUBJ_SCAN;
  s.vs_oracle[PARITY_T_O] = &m;
  s.out_dtype[PARITY_T_O] = dt;
  parity_case_view v = {dt, KERN_MATMUL_IEEE, 1, {&m}, 1, &s, NULL, 0, {0}};
  v.kappa_g[PARITY_T_O] = kappa;
  parity_checks c;
  parity_checks_init(&c);
  ck_assert_msg(parity_policy_judge(&p, &v, &c, &e) == GDN_OK, "%s", e.msg);
  ck_assert_uint_ge(c.n, 1);
  parity_check k = c.v[0];
  k.rule = NULL; /* the policy is cleared below */
  parity_checks_clear(&c);
  parity_policy_clear(&p);
  return k;
}

START_TEST(policy_kappa_band) {
  const double u = 0x1p-24;
  char pk[1024]; /* rule_text's buffer is reused by the next call */
  snprintf(pk, sizeof pk, "%s", rule_text("\"kappa_g_u\":1,"));
  /* ordinary gates: exactly the constant band, name unchanged */
  parity_check a = judge_one(pk, GDN_DTYPE_F32, 63.5, 1e-6), b = judge_one(rule_text(""), GDN_DTYPE_F32, 63.5, 1e-6);
  ck_assert(a.limit == 64 * u && b.limit == 64 * u && a.kappa_g == 0);
  ck_assert_str_eq(a.name, b.name);
  /* above it: kappa_G u, the check records kappa_G and its name says so */
  parity_check w = judge_one(pk, GDN_DTYPE_F32, 560, 1.24e-5);
  ck_assert(w.limit == 560 * u && w.kappa_g == 560 && w.pass);
  ck_assert_msg(strstr(w.name, "kappa_G = 560"), "%s", w.name);
  /* negative control: the constant band fails the same value (207u > 64u) */
  ck_assert(!judge_one(rule_text(""), GDN_DTYPE_F32, 560, 1.24e-5).pass);
  /* and the widened band still fails an error above it */
  ck_assert(!judge_one(pk, GDN_DTYPE_F32, 560, 561 * u).pass);
  /* float64 sums G in binary64: u_G = 2^-53, not float32's 2^-24 */
  ck_assert(judge_one(pk, GDN_DTYPE_F64, 32, 0).limit == 64 * 0x1p-53);
  ck_assert(judge_one(pk, GDN_DTYPE_F64, 560, 0).limit == 560 * 0x1p-53);
  /* unknown kappa_G (0) or NaN: constant / failing */
  ck_assert(judge_one(pk, GDN_DTYPE_F32, 0, 0).limit == 64 * u);
  ck_assert(!judge_one(pk, GDN_DTYPE_F32, NAN, 0).pass);
}
END_TEST

START_TEST(policy_kappa_refused) {
  gdn_error e;
  gdn_error_init(&e);
  parity_policy p;
  parity_policy_init(&p);
  ck_assert_int_eq(parity_policy_parse(&p, rule_text("\"kappa_g_u\":-1,"), "test", &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "kappa_g_u"), "%s", e.msg);
  gdn_error_init(&e);
  const char *rel = "{\"name\":\"t\",\"rules\":[{\"id\":\"r\",\"kind\":\"relative\",\"metric\":\"rel_fro\",\"factor\":2,"
                    "\"floor_u\":8,\"kappa_g_u\":1,\"reason\":\"r\"}]}";
  ck_assert_int_eq(parity_policy_parse(&p, rel, "test", &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "rule 0 (r)") && strstr(e.msg, "kappa_g_u"), "%s", e.msg);
  parity_policy_clear(&p);
}
END_TEST

/* ---- the gate on the finding's case ---- */

typedef struct {
  gdn_inputs in;
  parity_reference ref;
  gdn_outputs out[2]; /* our float64 scan rounded to float32; the same with 1e-4 planted on all of o */
} world;

static const char *const ext_names[2] = {"f64-scan", "planted"};

static void world_build(world *w, int fast, unsigned gates) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_shape s = {1, 1024, 2, 2, 64, 64};
  gdn_inputs_init(&w->in);
  gdn_synth_opts so = {11, gates | GDN_SYNTH_H0, 0};
  ck_assert_int_eq(gdn_synth_generate(&w->in, &s, &so, &e), GDN_OK);
  /* g = -80 on 5 % of (token, head) pairs, drawn by a fixed xorshift */
  uint64_t x = 0x9e3779b97f4a7c15u;
  if (fast)
    for (int64_t i = 0; i < s.T * s.Hv; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      if (x % 20 == 0) w->in.g[i] = -80.0f;
    }
  parity_reference_init(&w->ref);
  ck_assert_msg(parity_reference_compute(&w->ref, &w->in, PARITY_ORACLE_DD, 128, &e) == GDN_OK, "%s", e.msg);
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = GDN_DTYPE_F64;
  gdn_outputs f64;
  gdn_outputs_init(&f64);
  ck_assert_int_eq(gdn_outputs_alloc(&f64, &s, GDN_DTYPE_F64, &e), GDN_OK);
  ck_assert_msg(kern_scan(&w->in, &cfg, &f64, &e) == GDN_OK, "%s", e.msg);
  size_t no = gdn_shape_numel_v(&s), nh = gdn_shape_numel_state(&s);
  for (int k = 0; k < 2; k++) {
    gdn_outputs_init(&w->out[k]);
    ck_assert_int_eq(gdn_outputs_alloc(&w->out[k], &s, GDN_DTYPE_F32, &e), GDN_OK);
    /* planted: 1e-4 relative on every element of o, 3x the widened band
     * (kappa_G u = 3.3e-5 at kappa_G = 560) */
    for (size_t i = 0; i < no; i++) w->out[k].o[i] = (float)(f64.o[i] * (k ? 1 + 1e-4 : 1));
    for (size_t i = 0; i < nh; i++) w->out[k].ht[i] = (float)f64.ht[i];
  }
  gdn_outputs_clear(&f64);
}

static void world_clear(world *w) {
  for (int k = 0; k < 2; k++) gdn_outputs_clear(&w->out[k]);
  parity_reference_clear(&w->ref);
  gdn_inputs_clear(&w->in);
}

static FILE *run_log; /* when set, the text log goes there */
static int no_oracle;  /* run without a reference (--oracle none): no externals */
static int64_t run_devices = 2;
static kern_mutant run_mutant = KERN_MUTANT_NONE;

static void run(world *w, parity_policy *pol, kern_matmul mm, parity_doc *d) {
  parity_external ext[2];
  sws_externals(ext, 2, ext_names, w->out);
  parity_sweep_opts o;
  sws_opts(&o, pol, run_devices);
  o.matmul = mm;
  o.reproducible = 1;
  o.mutant = run_mutant;
  if (run_log) o.log = run_log, o.verbosity = 1;
  sws_run(d, &w->in, no_oracle ? NULL : &w->ref, no_oracle ? NULL : ext, no_oracle ? 0 : 2, &o);
}

static double num(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

/* Whether every check of subject `subj` passes (and it has some). */
static int subject_pass(json_t *c, const char *subj) {
  json_t *k;
  size_t i, n = 0;
  json_array_foreach(json_object_get(json_object_get(c, "tolerance"), "checks"), i, k) {
    if (strcmp(json_string_value(json_object_get(k, "subject")), subj)) continue;
    n++;
    if (!json_is_true(json_object_get(k, "pass"))) return 0;
  }
  return n > 0;
}

/* Every report says it is a finding about the stock algorithm, with kappa_G
 * and the band: the text log (case line), Markdown and HTML (Findings), and
 * JUnit (the failing case's body; a passing one's system-out). */
static void reports_say_it(const json_t *doc, const char *log) {
  ck_assert_msg(strstr(log, "finding: stock algorithm: ") && strstr(log, "kappa_G = "), "%s", log);
  gdn_error e;
  gdn_error_init(&e);
  report_buf b;
  for (int k = 0; k < 3; k++) {
    report_buf_init(&b);
    int rc = k == 0 ? report_markdown_render(doc, NULL, &b, &e)
                    : k == 1 ? report_html_render(doc, &b, &e) : report_junit_render(doc, &b, &e);
    ck_assert_msg(rc == GDN_OK, "%s", e.msg);
    report_buf_putc(&b, '\0');
    const char *want = k == 0 ? "**A finding about the stock algorithm**" : k == 1 ? "<b>a finding about the stock algorithm</b>" : "finding (a finding about the stock algorithm): stock algorithm: ";
    ck_assert_msg(strstr(b.data, want), "report %d lacks '%s'", k, want);
    const char *kg = k == 0 ? "kappa\\_G = " : "kappa_G = "; /* Markdown escapes the underscore */
    ck_assert_msg(strstr(b.data, kg) && strstr(b.data, k == 0 ? "4 kappa\\_G u" : "4 kappa_G u"), "report %d", k);
    report_buf_clear(&b);
  }
}

START_TEST(finding_case_passes_and_says_why) {
  world w;
  world_build(&w, 1, GDN_SYNTH_SLOW_GATES);
  gdn_error e;
  gdn_error_init(&e);
  static parity_policy pol;
  ck_assert_int_eq(parity_policy_load_builtin(&pol, &e), GDN_OK);
  const kern_matmul modes[] = {KERN_MATMUL_IEEE, KERN_MATMUL_HIGHEST, KERN_MATMUL_HIGH};
  const double u = 0x1p-24;
  for (size_t mi = 0; mi < sizeof modes / sizeof *modes; mi++) {
    parity_doc d;
    char *logtext = NULL;
    size_t loglen = 0;
    run_log = open_memstream(&logtext, &loglen);
    run(&w, &pol, modes[mi], &d);
    fclose(run_log);
    run_log = NULL;
    reports_say_it(d.root, logtext);
    free(logtext);
    json_t *c = json_array_get(json_object_get(d.root, "cases"), 0);
    json_t *kj = json_object_get(c, "kappa_g");
    double ko = num(kj, "o"), kh = num(kj, "ht");
    json_t *scan = json_object_get(json_object_get(c, "impls"), "scan");
    double rel = num(json_object_get(scan, "o"), "rel_fro"), relh = num(json_object_get(scan, "ht"), "rel_fro");
    fprintf(stderr, "matmul %s: kappa_G o %.4g ht %.4g; scan rel_fro o %.3g (%.0fu) ht %.3g (%.0fu)\n",
            kern_matmul_name(modes[mi]), ko, kh, rel, rel / u, relh, relh / u);
    /* the finding: the stock scan is above the constant 64u band in every
     * mode (float64 is exact) ... */
    ck_assert_msg(rel > 64 * u && relh > 64 * u, "scan rel_fro %g %g", rel, relh);
    /* ... and follows kappa_G: ieee and highest within 2 kappa_G u (the
     * measured slope is 1.0 to 1.7 for o, up to 2.1 for ht; the policy's 4
     * keeps a margin of 2); HIGH adds its bf16 passes' own 1.2e-5 to 3.3e-5 */
    if (modes[mi] != KERN_MATMUL_HIGH) {
      ck_assert_msg(rel < 2 * ko * u, "o %g vs kappa %g", rel / u, ko);
      ck_assert_msg(relh < 2.2 * kh * u, "ht %g vs kappa %g", relh / u, kh);
    }
    const char *f = json_string_value(json_object_get(c, "finding"));
    json_t *kk;
    size_t ki;
    json_array_foreach(json_object_get(json_object_get(c, "tolerance"), "checks"), ki, kk)
      if (!json_is_true(json_object_get(kk, "pass")))
        fprintf(stderr, "  fails: %s (%s): %.3g > %.3g\n", json_string_value(json_object_get(kk, "name")),
                json_string_value(json_object_get(kk, "rule")), num(kk, "value"), num(kk, "limit"));
    json_t *impls = json_object_get(c, "impls");
    json_t *planted = json_object_get(impls, "planted");
    if (modes[mi] != KERN_MATMUL_HIGH) {
      /* ... so the band follows kappa_G, the case passes and says why */
      for (int t = 0; t < 2; t++) {
        json_t *band = find_check(c, "band-float32", "scan", t ? "ht" : "o");
        double kt = t ? kh : ko;
        ck_assert_ptr_nonnull(band);
        ck_assert(json_is_true(json_object_get(band, "pass")));
        /* the band is max(4 kappa_G u, the error model's normwise bound) */
        const double mb = num(json_object_get(band, "model"), "bound");
        ck_assert_msg(num(band, "limit") == fmax(4 * kt * u, mb) && num(band, "kappa_g") == kt, "%s",
                      json_string_value(json_object_get(band, "name")));
      }
      ck_assert_msg(subject_pass(c, "scan"), "scan must pass");
      ck_assert(subject_pass(c, "affine-prefix"));
      ck_assert(json_is_true(json_object_get(json_object_get(impls, "f64-scan"), "pass")));
      ck_assert_msg(f && strstr(f, "stock algorithm: ") && strstr(f, "kappa_G = "), "finding: %s", f ? f : "(none)");
      /* negative control: the planted 1e-4 is above the widened band (by
       * 1.86x since the error model's tree probes, which raised the model's
       * normwise bound here to 2.7e-5, limit 5.38e-5; 2x before them) */
      json_t *pb = find_check(c, "band-float32", "planted", "o");
      ck_assert(json_is_false(json_object_get(pb, "pass")));
      ck_assert_msg(num(pb, "value") > 1.5 * num(pb, "limit"), "planted %g vs limit %g", num(pb, "value"),
                    num(pb, "limit"));
    } else {
      /* HIGH's band (2^-13) is above kappa_G u here: the scan's is not
       * widened (the externals declare ieee: theirs is, and the finding says so) */
      json_t *band = find_check(c, "band-float32-high", "scan", "o");
      ck_assert(num(band, "limit") == 1.2e-4 && !json_object_get(band, "kappa_g"));
      ck_assert_msg(f && strstr(f, "stock algorithm: "), "finding: %s", f ? f : "(none)");
      ck_assert(subject_pass(c, "scan"));
    }
    ck_assert(json_is_false(json_object_get(planted, "pass")));
    ck_assert(json_is_false(json_object_get(c, "pass")));
    parity_doc_clear(&d);
  }
  world_clear(&w);
}
END_TEST

/* The built-in policy into pol, and into old the same without any rule's
 * "kappa_g_u" (the constant bands: the control); the number of rules that
 * had it. */
static size_t policies_with_and_without_kappa(parity_policy *pol, parity_policy *old) {
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_policy_load_builtin(pol, &e), GDN_OK);
  json_t *pj = json_loads(parity_policy_builtin_text(), 0, NULL), *r;
  size_t i, widened = 0;
  json_array_foreach(json_object_get(pj, "rules"), i, r) widened += json_object_del(r, "kappa_g_u") == 0;
  char *txt = json_dumps(pj, 0);
  ck_assert_int_eq(parity_policy_parse(old, txt, "without kappa_g_u", &e), GDN_OK);
  free(txt);
  json_decref(pj);
  return widened;
}

/* --oracle none: the kernels are compared with each other.  With 32
 * devices each holds 32 tokens padded to its own chunk of 64, so
 * affine-prefix's chunks are not the scan's and their float32 G round
 * differently: they differ by about kappa_G u, over the constant 64u.  The
 * no-oracle band follows kappa_G and the case passes with the finding;
 * controls: the policy without kappa_g_u fails it, and a real bug (the
 * carried state rounded to bfloat16 at every seam) fails the widened band. */
START_TEST(no_oracle_follows_kappa) {
  world w;
  world_build(&w, 1, GDN_SYNTH_SLOW_GATES);
  gdn_error e;
  gdn_error_init(&e);
  static parity_policy pol, old;
  policies_with_and_without_kappa(&pol, &old);
  no_oracle = 1, run_devices = 32;
  const double u = 0x1p-24;
  for (int k = 0; k < 3; k++) {
    parity_doc d;
    run_mutant = k == 2 ? KERN_MUTANT_BF16_SEAM : KERN_MUTANT_NONE;
    run(&w, k == 1 ? &old : &pol, KERN_MATMUL_IEEE, &d);
    json_t *c = json_array_get(json_object_get(d.root, "cases"), 0);
    json_t *vs = find_check(c, "no-oracle-float32", "affine-prefix", "o");
    ck_assert_ptr_nonnull(vs);
    double ko = num(json_object_get(c, "kappa_g"), "o");
    fprintf(stderr, "--oracle none%s: affine vs scan o %.3g (%.0fu), limit %.3g, kappa_G %.4g\n",
            k == 1 ? " (policy without kappa_g_u)" : k == 2 ? " (bf16-seam)" : "", num(vs, "value"),
            num(vs, "value") / u, num(vs, "limit"), ko);
    if (k == 0) {
      ck_assert(num(vs, "value") > 64 * u); /* the reason */
      ck_assert(num(vs, "limit") == 4 * ko * u && json_is_true(json_object_get(vs, "pass")));
      ck_assert(json_is_true(json_object_get(c, "pass")));
      const char *f = json_string_value(json_object_get(c, "finding"));
      ck_assert_msg(f && strstr(f, "stock algorithm: "), "%s", f ? f : "(none)");
      /* a passing case: JUnit carries the finding as the case's system-out */
      report_buf b;
      report_buf_init(&b);
      ck_assert_int_eq(report_junit_render(d.root, &b, &e), GDN_OK);
      report_buf_putc(&b, '\0');
      ck_assert_msg(strstr(b.data, "<system-out>finding (a finding about the stock algorithm): stock algorithm: ") &&
                        !strstr(b.data, "<failure"),
                    "%s", b.data);
      report_buf_clear(&b);
    } else {
      ck_assert(json_is_false(json_object_get(vs, "pass")));
      ck_assert(json_is_false(json_object_get(c, "pass")));
    }
    parity_doc_clear(&d);
  }
  no_oracle = 0, run_devices = 2, run_mutant = KERN_MUTANT_NONE;
  parity_policy_clear(&old);
  world_clear(&w);
}
END_TEST

/* Ordinary gates, slow and the model's initial ones: 4 kappa_G u is below
 * 64u, so every check has exactly the limit and name of the policy
 * without "kappa_g_u". */
static void ordinary(unsigned gates) {
  world w;
  world_build(&w, 0, gates);
  static parity_policy pol, old;
  /* band-float32, band-float32-high and their no-oracle twins */
  ck_assert_uint_eq(policies_with_and_without_kappa(&pol, &old), 4);
  parity_doc a, b;
  run(&w, &pol, KERN_MATMUL_IEEE, &a);
  run(&w, &old, KERN_MATMUL_IEEE, &b);
  json_t *ca = json_array_get(json_object_get(a.root, "cases"), 0), *cb = json_array_get(json_object_get(b.root, "cases"), 0);
  json_t *kj = json_object_get(ca, "kappa_g");
  fprintf(stderr, "%s gates: kappa_G o %.3g ht %.3g\n", gates ? "slow" : "initial", num(kj, "o"), num(kj, "ht"));
  ck_assert(4 * num(kj, "o") < 64 && 4 * num(kj, "ht") < 64);
  ck_assert_ptr_null(json_object_get(ca, "finding"));
  json_t *ka = json_object_get(json_object_get(ca, "tolerance"), "checks");
  json_t *kb = json_object_get(json_object_get(cb, "tolerance"), "checks");
  ck_assert_uint_eq(json_array_size(ka), json_array_size(kb));
  for (size_t i = 0; i < json_array_size(ka); i++) {
    json_t *x = json_array_get(ka, i), *y = json_array_get(kb, i);
    ck_assert_str_eq(json_string_value(json_object_get(x, "name")), json_string_value(json_object_get(y, "name")));
    ck_assert(num(x, "limit") == num(y, "limit"));
    ck_assert_ptr_null(json_object_get(x, "kappa_g"));
  }
  ck_assert(json_equal(json_object_get(ca, "pass"), json_object_get(cb, "pass")));
  parity_doc_clear(&a);
  parity_doc_clear(&b);
  parity_policy_clear(&old);
  world_clear(&w);
}

START_TEST(ordinary_gates_unchanged) {
  ordinary(GDN_SYNTH_SLOW_GATES);
  ordinary(0); /* the model's initial gates: large |G|, small decays between tokens */
}
END_TEST

CKR_MAIN_FORK(CK_NOFORK, "kappa", "kappa", 600, kappa_matches_definition, kappa_over_head_groups, kappa_float32_rounding, policy_kappa_band,
    policy_kappa_refused, finding_case_passes_and_says_why, ordinary_gates_unchanged, no_oracle_follows_kappa)
