#include "sample_doc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_num.h"

static json_t *shape(long long B, long long T, long long H, long long D) {
  return json_pack("{sI sI sI sI sI sI}", "B", (json_int_t)B, "T", (json_int_t)T, "Hk",
                   (json_int_t)H, "Hv", (json_int_t)H, "Dk", (json_int_t)D, "Dv", (json_int_t)D);
}

static json_t *metrics(double rel_fro, double max_abs, double max_ulp, int with_worst_t) {
  json_t *m = json_pack("{so so so so so so sI sI sI}", "max_abs", report_num_to_json(max_abs),
                        "rel_fro", report_num_to_json(rel_fro), "max_ulp",
                        report_num_to_json(max_ulp), "median_ulp",
                        report_num_to_json(max_ulp / 16), "max_rel",
                        report_num_to_json(rel_fro * 40), "rel_floor",
                        report_num_to_json(ldexp(1, -24) * 0.6), "zero_ref", (json_int_t)0,
                        "nonfinite", (json_int_t)0, "n", (json_int_t)1048576);
  if (with_worst_t)
    json_object_set_new(m, "worst", json_pack("{sI sI sI sI}", "b", (json_int_t)0, "t",
                                              (json_int_t)with_worst_t, "h", (json_int_t)1, "d",
                                              (json_int_t)17));
  else
    json_object_set_new(m, "worst", json_pack("{sI sI sI sI}", "b", (json_int_t)0, "h",
                                              (json_int_t)2, "dk", (json_int_t)3, "dv",
                                              (json_int_t)5));
  return m;
}

static json_t *check(const char *name, const char *metric, double value, double limit,
                     const char *reason) {
  return json_pack("{ss ss so so sb ss so}", "name", name, "metric", metric, "value",
                   report_num_to_json(value), "limit", report_num_to_json(limit), "pass",
                   value <= limit, "reason", reason, "factor_reached",
                   report_num_to_json(value / (limit / 4)));
}

/* The deciding check: the first failing one, else the tightest. */
static void set_deciding(json_t *tol) {
  json_t *checks = json_object_get(tol, "checks");
  size_t best = 0;
  double best_m = -1;
  for (size_t i = 0; i < json_array_size(checks); i++) {
    json_t *k = json_array_get(checks, i);
    if (!json_is_true(json_object_get(k, "pass"))) {
      best = i;
      break;
    }
    double v, l;
    report_num_get(json_object_get(k, "value"), &v);
    report_num_get(json_object_get(k, "limit"), &l);
    if (v / l > best_m) best_m = v / l, best = i;
  }
  json_object_set_new(tol, "deciding", json_integer((json_int_t)best));
}

void sample_doc_refresh_verdict(json_t *doc) {
  json_t *cases = json_object_get(doc, "cases");
  int all = 1;
  for (size_t i = 0; i < json_array_size(cases); i++) {
    json_t *c = json_array_get(cases, i);
    json_t *tol = json_object_get(c, "tolerance");
    int pass = !json_object_get(c, "error");
    json_t *checks = json_object_get(tol, "checks");
    for (size_t k = 0; k < json_array_size(checks); k++) {
      json_t *ck = json_array_get(checks, k);
      double v, l;
      if (report_num_get(json_object_get(ck, "value"), &v) &&
          report_num_get(json_object_get(ck, "limit"), &l))
        json_object_set_new(ck, "pass", json_boolean(v <= l));
      pass &= json_is_true(json_object_get(ck, "pass"));
    }
    set_deciding(tol);
    json_object_set_new(c, "pass", json_boolean(pass));
    all &= pass;
  }
  json_object_set_new(doc, "pass", json_boolean(all));
  json_object_set_new(doc, "exit_status", json_integer(all ? 0 : 1));
}

static json_t *upstream(double rel_fro, double max_abs, double ref_max) {
  /* MaxText: |x - r| <= atol + rtol |r| elementwise with 1e-6 each; the
   * elementwise bound at the worst element is about 1e-6 (1 + |r|). */
  int maxtext = max_abs <= 1e-6 * (1 + ref_max);
  int torch32 = max_abs <= 1e-5 + 1.3e-6 * ref_max;
  int torch16 = max_abs <= 1e-5 + 1.6e-2 * ref_max;
  int fla = rel_fro < 0.005;
  char d[4][160];
  snprintf(d[0], sizeof d[0], "max |x - r| = %.3g vs atol + rtol |r| = %.3g", max_abs,
           1e-6 * (1 + ref_max));
  snprintf(d[1], sizeof d[1], "max |x - r| = %.3g vs %.3g", max_abs, 1e-5 + 1.3e-6 * ref_max);
  snprintf(d[2], sizeof d[2], "max |x - r| = %.3g vs %.3g", max_abs, 1e-5 + 1.6e-2 * ref_max);
  snprintf(d[3], sizeof d[3], "RMS ratio %.3g", rel_fro);
  return json_pack("[{ss sb ss} {ss sb ss} {ss sb ss} {ss sb ss}]", "name",
                   "MaxText atol=rtol=1e-6", "pass", maxtext, "detail", d[0], "name",
                   "torch.testing float32 (rtol 1.3e-6, atol 1e-5)", "pass", torch32, "detail",
                   d[1], "name", "torch.testing bfloat16 (rtol 1.6e-2, atol 1e-5)", "pass",
                   torch16, "detail", d[2], "name", "flash-linear-attention RMS ratio < 0.005",
                   "pass", fla, "detail", d[3]);
}

static json_t *num_array(const double *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(a, report_num_to_json(v[i]));
  return a;
}

typedef struct case_spec {
  long long input, T, chunk, devices;
  const char *prefix;
  double growth;      /* extra affine-prefix error per seam, relative */
  int profiles;
  const char *input_name;
} case_spec;

static json_t *make_case(const case_spec *cs) {
  const long long H = 4, D = 64, C = cs->chunk, T = cs->T, Dv = cs->devices;
  char id[200];
  /* Fixture cases carry the fixture's name, as `check --fixture` ids do. */
  snprintf(id, sizeof id, "%sB1-T%lld-H%lld-D%lld-C%lld-D%lld-%s-float32-highest",
           cs->input == 2 ? "qwen35_l7/" : "", T, H, D, C, Dv, cs->prefix);
  /* Closed-form error model: the scan's error grows like sqrt(T); the
   * affine-prefix adds a little per seam, more for longer shards. */
  double scan_o = 1.6e-7 * sqrt((double)T / 1024) * (1 + 0.05 * (double)(cs->input / 2));
  double pfx = !strcmp(cs->prefix, "sequential") ? 1.0 : !strcmp(cs->prefix, "associative-scan") ? 1.15 : 1.3;
  double aff_o = scan_o * (1 + cs->growth * pfx * (double)(Dv - 1));
  double avs_o = Dv == 1 ? 0 : scan_o * cs->growth * pfx * (double)(Dv - 1) * 0.9;
  double scan_ht = scan_o * 0.7, aff_ht = aff_o * 0.72, avs_ht = avs_o * 0.7;
  double ref_max = 0.35;
  json_t *c = json_object();
  json_object_set_new(c, "id", json_string(id));
  json_object_set_new(c, "input", json_integer(cs->input));
  json_object_set_new(c, "shape", shape(1, T, H, D));
  json_object_set_new(c, "chunk", json_integer(C));
  json_object_set_new(c, "devices", json_integer(Dv));
  json_object_set_new(c, "prefix", json_string(cs->prefix));
  json_object_set_new(c, "dtype", json_string("float32"));
  json_object_set_new(c, "matmul_precision", json_string("highest"));
  json_object_set_new(c, "ftz", json_false());
  json_object_set_new(c, "output_dtype", json_string("float32"));
  long long nchunks = (T + C - 1) / C, per = nchunks / Dv;
  json_t *shards = json_array();
  for (long long r = 0; r < Dv; r++)
    json_array_append_new(shards, json_pack("[II]", (json_int_t)(r * per),
                                            (json_int_t)(r == Dv - 1 ? nchunks - r * per : per)));
  json_object_set_new(c, "shards", shards);
  double ulp = 1.0 / ldexp(1, -24) / ref_max; /* rel error -> ULP, roughly */
  json_object_set_new(
      c, "impls",
      json_pack("{s{so so} s{so so}}", "scan", "o", metrics(scan_o, scan_o * 3 * ref_max, scan_o * ulp * 2, (int)(T / 3)),
                "ht", metrics(scan_ht, scan_ht * 2, scan_ht * ulp, 0), "affine-prefix", "o",
                metrics(aff_o, aff_o * 3 * ref_max, aff_o * ulp * 2, (int)(T / 2)), "ht",
                metrics(aff_ht, aff_ht * 2, aff_ht * ulp, 0)));
  json_object_set_new(c, "affine_vs_scan",
                      json_pack("{so so}", "o", metrics(avs_o, avs_o * 3 * ref_max, avs_o * ulp * 2, (int)(T / 2)),
                                "ht", metrics(avs_ht, avs_ht * 2, avs_ht * ulp, 0)));
  json_t *checks = json_array();
  json_array_append_new(checks, check("scan o vs oracle", "rel_fro", scan_o, 6e-7,
                                      "builtin-v1: 4 u sqrt(T/1024) for float32/highest"));
  json_array_append_new(checks, check("affine-prefix o vs oracle", "rel_fro", aff_o, 6e-7,
                                      "builtin-v1: the scan's allowance; the CP form must be as "
                                      "accurate as the stock scan"));
  json_array_append_new(checks, check("affine-prefix ht vs oracle", "rel_fro", aff_ht, 6e-7,
                                      "builtin-v1: as for o"));
  json_array_append_new(checks, check("affine-prefix o vs scan", "rel_fro", avs_o, 8e-7,
                                      "builtin-v1: twice the per-implementation allowance"));
  json_t *tol = json_pack("{so}", "checks", checks);
  set_deciding(tol);
  json_object_set_new(c, "tolerance", tol);
  json_object_set_new(c, "upstream", upstream(aff_o, aff_o * 3 * ref_max, ref_max));
  if (cs->profiles) {
    long long block = 64, nb = (T + block - 1) / block;
    double t0[4096], rm[4096], ps[4096], pa[4096], pv[4096];
    for (long long i = 0; i < nb && i < 4096; i++) {
      double t = (double)(i * block);
      long long shard = (long long)(t * (double)Dv / (double)T);
      double wob = 1 + 0.35 * sin(0.37 * (double)i) + 0.15 * cos(1.7 * (double)i);
      t0[i] = t;
      rm[i] = ref_max * (0.8 + 0.2 * cos(0.05 * (double)i));
      ps[i] = scan_o * 2.5 * ref_max * wob * sqrt((t + 64) / (double)T);
      /* After each seam the prefix state carries extra rounding. */
      double extra = (double)shard * cs->growth * pfx * 1.5;
      pa[i] = ps[i] * (1 + extra);
      pv[i] = shard == 0 ? 0 : ps[i] * extra * 0.9;
    }
    json_object_set_new(c, "profile",
                        json_pack("{sI so so so so so}", "block", (json_int_t)block, "t0",
                                  num_array(t0, (size_t)nb), "ref_max_abs", num_array(rm, (size_t)nb),
                                  "scan", num_array(ps, (size_t)nb), "affine-prefix",
                                  num_array(pa, (size_t)nb), "affine_vs_scan",
                                  num_array(pv, (size_t)nb)));
    json_t *seams = json_array();
    for (long long r = 1; r < Dv; r++) {
      double extra = (double)r * cs->growth * pfx * 1.5;
      json_array_append_new(
          seams, json_pack("{sI sI sI so so so so}", "device", (json_int_t)r, "chunk",
                           (json_int_t)(r * per), "t", (json_int_t)(r * per * C), "scan",
                           report_num_to_json(scan_o * ref_max * 2), "affine-prefix",
                           report_num_to_json(scan_o * ref_max * 2 * (1 + extra)),
                           "affine_vs_scan", report_num_to_json(scan_o * ref_max * 2 * extra),
                           "state_rel", report_num_to_json(scan_o * extra * 1.1)));
    }
    json_object_set_new(c, "seams", seams);
    /* ULP histogram of o: most elements within a couple of ULP. */
    static const double edges[] = {0, 0.5, 1, 2, 4, 8, 16, 32, 64, 128};
    double hs[10], ha[10], n = (double)(T * H * D);
    for (int k = 0; k < 10; k++) {
      double f = exp(-1.6 * k) * (1 - exp(-1.6));
      hs[k] = floor(n * f);
      ha[k] = floor(n * f * exp(1.6 * k * (1 - 1 / (1 + cs->growth * pfx * (double)(Dv - 1)))));
    }
    hs[9] = 0; /* an empty bin: no bar, not a crash */
    json_object_set_new(c, "ulp_histogram",
                        json_pack("{so so so}", "edges", num_array(edges, 10), "scan",
                                  num_array(hs, 10), "affine-prefix", num_array(ha, 10)));
  }
  json_object_set_new(c, "seconds", json_real(0.25 + 1e-4 * (double)T * (double)Dv / 8));
  json_object_set_new(c, "pass", json_true());
  return c;
}

/* An inputs entry of the synthetic seed 0 at B = 1, Hk = Hv = 4, D = 64 and
 * sequence length T (the realistic document's two lengths). */
static json_t *synthetic_input(const char *sha256, long long T) {
  return json_pack("{ss ss ss so sb sb s[] sI}", "name", "synthetic seed 0", "source", "synthetic", "sha256", sha256,
                   "shape", shape(1, T, 4, 64), "l2norm_in_kernel", 1, "h0", 0, "bf16_inputs",
                   "oracle_certified_bits", (json_int_t)118);
}

static json_t *doc_skeleton(void) {
  json_t *d = json_object();
  json_object_set_new(d, "tool", json_string("gdn-parity"));
  json_object_set_new(d, "version", json_string("0.1.0"));
  json_object_set_new(d, "git_commit", json_string("9afc464a1b2c"));
  json_object_set_new(d, "schema", json_integer(1));
  json_object_set_new(d, "command",
                      json_string("gdn-parity --shape 1,4096,4,64 --devices 1,2,4,8 --prefix "
                                  "sequential,associative-scan,hillis-steele --json results.json "
                                  "--report report.html"));
  json_object_set_new(d, "pass", json_true());
  json_object_set_new(d, "exit_status", json_integer(0));
  json_object_set_new(d, "oracle", json_pack("{ss ss sI sI sI}", "tier", "mpfr", "form", "token",
                                             "precision_bits", (json_int_t)128, "check_bits",
                                             (json_int_t)192, "certified_bits", (json_int_t)118));
  json_object_set_new(d, "policy", json_pack("{ss ss ss}", "name", "builtin-v1", "source",
                                             "built in", "sha256",
                                             "5f0c1de2a8b94e0f7c3a1d9e6b2f4a8c0e7d5b3a1f9c8e6d4b2a0f1e3c5d7b9a"));
  json_t *inputs = json_array();
  json_array_append_new(inputs,
                        synthetic_input("0b1e5c3f7a9d2e4b6c8a0f1d3e5b7c9a2d4f6e8b0a1c3e5d7f9b2a4c6e8d0f1a", 1024));
  json_array_append_new(inputs,
                        synthetic_input("7d3f1b9e5a2c4e6f8b0d2a4c6e8f0b1d3a5c7e9f1b3d5a7c9e1f3b5d7a9c1e3f", 4096));
  /* A fixture whose name and path need escaping everywhere. */
  json_array_append_new(inputs, json_pack("{ss ss ss ss so sb sb s[ss] sI}", "name",
                                          "qwen3.5 layer 7 <&\"quoted\">", "source", "fixture",
                                          "path", "fixtures/data/qwen35_l7 & co.h5", "sha256",
                                          "c4a2e6f8b0d1c3e5a7f9b2d4e6a8c0f1b3d5e7a9c2e4f6b8d0a1c3e5f7b9d2e4",
                                          "shape", shape(1, 4096, 4, 64), "l2norm_in_kernel", 1,
                                          "h0", 1, "bf16_inputs", "q", "k",
                                          "oracle_certified_bits", (json_int_t)121));
  json_object_set_new(d, "inputs", inputs);
  json_object_set_new(d, "cases", json_array());
  return d;
}

json_t *sample_doc_realistic(void) {
  json_t *d = doc_skeleton();
  json_t *cases = json_object_get(d, "cases");
  static const char *const prefixes[] = {"sequential", "associative-scan", "hillis-steele"};
  static const long long Ts[] = {1024, 4096}, Ds[] = {1, 2, 4, 8};
  for (long long in = 0; in < 2; in++)
    for (int ti = 0; ti < 2; ti++)
      for (int di = 0; di < 4; di++)
        for (int p = 0; p < 3; p++) {
          if (Ds[di] == 1 && p > 0) continue; /* one device: no prefix to schedule */
          if (in == 1 && ti == 0) continue;   /* the fixture is 4096 long only */
          long long input = in == 1 ? 2 : ti == 0 ? 0 : 1;
          case_spec cs = {input, Ts[ti], 64, Ds[di], prefixes[p], 0.06, 1, NULL};
          /* The one failing case: the fixture, eight devices, Hillis-Steele:
           * the error added per seam is large enough to cross the limit. */
          if (in == 1 && Ds[di] == 8 && p == 2) cs.growth = 0.22;
          json_array_append_new(cases, make_case(&cs));
        }
  json_object_set_new(d, "timing", json_pack("{s{sf sf sf} sI}", "seconds", "oracle", 41.5,
                                              "kernels", 3.25, "total", 45.0, "threads",
                                              (json_int_t)2));
  sample_doc_refresh_verdict(d);
  return d;
}

json_t *sample_doc_many(size_t n, size_t n_fail, int with_profiles) {
  json_t *d = doc_skeleton();
  json_t *cases = json_object_get(d, "cases");
  static const char *const prefixes[] = {"sequential", "associative-scan", "hillis-steele"};
  for (size_t i = 0; i < n; i++) {
    case_spec cs = {(long long)(i % 3), 1024 << (i % 3), 64, 1LL << (i % 4), prefixes[i % 3],
                    0.01, with_profiles, NULL};
    json_t *c = make_case(&cs);
    char id[64];
    snprintf(id, sizeof id, "case-%06zu|%s", i, i < n_fail ? "fail" : "pass");
    json_object_set_new(c, "id", json_string(id));
    if (i < n_fail) {
      /* Push the affine-prefix error over its limit. */
      json_t *k = json_array_get(json_object_get(json_object_get(c, "tolerance"), "checks"), 1);
      json_object_set_new(k, "value", json_real(6e-7 * (1.5 + (double)(i % 7))));
    }
    json_array_append_new(cases, c);
  }
  sample_doc_refresh_verdict(d);
  return d;
}

/* The failing case (the fixture, eight devices) as `check --fixture` of a
 * dump writes it: the dump's output tpu_cp_d8 judged there, failing by far
 * (0.36), the case's subject; its numbers against the oracle and against
 * the dump's stock output, its upstream verdicts (all fail), profile and
 * ULP counts, and its check deciding the case. */
void sample_doc_add_subject(json_t *doc) {
  json_t *cases = json_object_get(doc, "cases"), *c = NULL;
  for (size_t i = 0; i < json_array_size(cases) && !c; i++)
    if (json_is_false(json_object_get(json_array_get(cases, i), "pass"))) c = json_array_get(cases, i);
  if (!c) return;
  const char *name = "tpu_cp_d8";
  json_t *imp = json_pack("{so so sb s{sI ss ss}}", "o", metrics(0.364, 0.41, 3e6, 2304), "ht",
                          metrics(2.1e-7, 4e-7, 30, 0), "pass", 0, "attrs", "devices", (json_int_t)8,
                          "implementation", "affine-prefix", "platform", "tpu v5p");
  json_object_set_new(json_object_get(c, "impls"), name, imp);
  json_object_set_new(c, "subject", json_string(name));
  json_object_set_new(c, "upstream_against", json_string("tpu_scan"));
  json_object_set_new(c, "subject_vs_against",
                      json_pack("{so so}", "o", metrics(0.364, 0.41, 3e6, 2304), "ht", metrics(1e-7, 2e-7, 20, 0)));
  json_object_set_new(c, "upstream", upstream(0.364, 0.41, 0.35));
  json_t *checks = json_object_get(json_object_get(c, "tolerance"), "checks");
  json_array_insert_new(checks, 0, check("tpu_cp_d8 o rel_fro <= 2 x max(scan, 8u)", "rel_fro", 0.364, 9.5e-7,
                                        "builtin-v1: the dump's output must be as accurate as the stock scan"));
  json_object_set_new(json_array_get(checks, 0), "subject", json_string(name));
  json_object_set_new(json_array_get(checks, 0), "rule", json_string("core-affine-no-worse-than-scan"));
  set_deciding(json_object_get(c, "tolerance"));
  json_t *prof = json_object_get(c, "profile"), *h = json_object_get(c, "ulp_histogram");
  size_t n = json_array_size(json_object_get(prof, "t0"));
  json_t *pv = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(pv, report_num_to_json(i < n / 8 ? 1e-7 : 0.3));
  json_object_set_new(prof, name, pv);
  size_t nb = json_array_size(json_object_get(h, "edges"));
  json_t *hv = json_array();
  for (size_t k = 0; k < nb; k++) json_array_append_new(hv, json_integer(k + 1 == nb ? 200000 : 4000 >> k));
  json_object_set_new(h, name, hv);
  sample_doc_refresh_verdict(doc);
}
