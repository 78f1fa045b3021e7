/* The HTML report: structure (verdict, deciding numbers, environment,
 * table, every plot by id), escaping of hostile document strings,
 * self-containment, determinism, edge data (no cases, no oracle, zeros, NaN,
 * one point, decades of range, one T), size with many cases and long
 * profiles, and atomic writes under allocation failure. */
#include <check.h>
#include <math.h>

#include "gdn_alloc.h"
#include "report_html.h"
#include "report_num.h"
#include "page_doc.h"
#include "sample_doc.h"
#include "svg_check.h"
#include "test_util.h"
#include "../check_runner.h"
#include "../check_text.h"

static char *render(const json_t *doc, size_t *len) { return test_render(report_html_render, doc, len); }

static size_t count(const char *s, const char *needle) {
  size_t n = 0, k = strlen(needle);
  for (const char *p = strstr(s, needle); p; p = strstr(p + k, needle)) n++;
  return n;
}

/* Every <svg>...</svg> in the page: finite coordinates, no "nan". */
static size_t check_all_svg(const char *html) {
  size_t n = 0;
  for (const char *p = strstr(html, "<svg"); p; p = strstr(p + 4, "<svg")) {
    const char *e = strstr(p, "</svg>");
    ck_assert_ptr_nonnull(e);
    size_t len = (size_t)(e - p);
    size_t bad = svg_bad_coordinate(p, len);
    ck_assert_msg(bad == 0, "bad coordinate in svg %zu at: %.80s", n, p + bad - 1);
    ck_assert_msg(!svg_has_nan_text(p, len), "\"nan\" in svg %zu", n);
    n++;
  }
  return n;
}

/* The text of the element with id="id", up to its closing tag name. */
static const char *section(const char *html, const char *id, const char *close, size_t *len) {
  char key[64];
  snprintf(key, sizeof key, "id=\"%s\"", id);
  const char *p = strstr(html, key);
  ck_assert_msg(p != NULL, "no element with %s", key);
  const char *e = strstr(p, close);
  ck_assert_ptr_nonnull(e);
  *len = (size_t)(e - p);
  return p;
}

static int section_has(const char *html, const char *id, const char *close, const char *needle) {
  size_t len;
  const char *p = section(html, id, close, &len);
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= len; i++)
    if (!memcmp(p + i, needle, k)) return 1;
  return 0;
}

static const char *const PLOTS[] = {"plot-profile", "plot-devices", "plot-length", "plot-heatmap",
                                    "plot-ulp"};

START_TEST(realistic_structure) {
  size_t len;
  char *h = render(doc, &len);
  ck_assert(!strncmp(h, "<!DOCTYPE html>\n<html lang=\"en\" data-verdict=\"fail\">", 52));
  /* The verdict: a word, not colour alone. */
  ck_assert_ptr_nonnull(strstr(h, "<header id=\"verdict\" class=\"verdict verdict-fail\""));
  ck_assert(section_has(h, "verdict", "</header>", "FAIL</div>"));
  ck_assert(section_has(h, "verdict", "</header>", "1 of 30 cases out of tolerance"));
  /* The deciding numbers: case, check, metric, value, limit, reason. */
  ck_assert(section_has(h, "deciding", "</p>", "affine-prefix o vs oracle"));
  ck_assert(section_has(h, "deciding", "</p>", "<code>rel_fro</code> = <b class=\"val\">1.009e-6</b>"));
  ck_assert(section_has(h, "deciding", "</p>", "limit <b class=\"val\">6e-7</b>"));
  ck_assert(section_has(h, "deciding", "</p>", "1.68\xC3\x97 the limit"));
  ck_assert(section_has(h, "deciding", "</p>", "the CP form must be as accurate"));
  ck_assert(section_has(h, "verdict", "</header>", "passed 1 of the 1 failing case"));
  /* The environment. */
  ck_assert(section_has(h, "environment", "</section>", "git commit <code>9afc464a1b2c</code>"));
  ck_assert(section_has(h, "environment", "</section>", "certified bits 118"));
  ck_assert(section_has(h, "environment", "</section>", "builtin-v1"));
  ck_assert(section_has(h, "environment", "</section>", "<code>float32</code>"));
  ck_assert(section_has(h, "environment", "</section>", "<code>highest</code>"));
  ck_assert(section_has(h, "environment", "</section>", "--prefix sequential,associative-scan"));
  ck_assert(section_has(h, "inputs", "</table>", "c4a2e6f8b0d1c3e5"));
  ck_assert(section_has(h, "inputs", "</table>", "B=1 T=4096 Hk=4 Hv=4 Dk=64 Dv=64"));
  /* The table: every case, the failing one first and marked. */
  size_t tl;
  const char *t = section(h, "case-table", "</table>", &tl);
  ck_assert_ptr_nonnull(strstr(t, "<tbody>\n<tr id=\"case-29\" data-i=\"0\" class=\"fail\">"));
  ck_assert_uint_eq(count(t, "<tr id=\"case-"), 30);
  ck_assert_uint_eq(count(t, " class=\"fail\">"), 1);
  CKT_HAS_ALL(t, "<b>upstream: pass / ours: fail</b>", "<td class=\"up missed\"");
  /* Every plot, with an SVG, and every SVG clean. */
  for (size_t i = 0; i < 5; i++) ck_assert_msg(section_has(h, PLOTS[i], "</figure>", "<svg"), "%s", PLOTS[i]);
  ck_assert_uint_ge(check_all_svg(h), 7); /* 3 profiles + 4 summary plots */
  /* The worst group's profile is open, with its seams. */
  ck_assert_ptr_nonnull(strstr(h, "<details class=\"profile\" id=\"profile-0\" open>"));
  ck_assert_uint_eq(count(h, "<g class=\"seam\">"), 7 + 7 + 7);
  /* Scripts: the error trap in <head> before the styles, the sorter last. */
  ck_assert(strstr(h, "window.onerror") < strstr(h, "<style>"));
  ck_assert_ptr_nonnull(strstr(h, "setAttribute('data-script','ran')"));
  gdn_free(h);
}
END_TEST

START_TEST(self_contained) {
  char *h = render(doc, NULL);
  /* The only URL is the SVG namespace; no external resource of any kind. */
  ck_assert_uint_eq(count(h, "http"), count(h, "xmlns=\"http://www.w3.org/2000/svg\"") +
                                          count(h, "<meta http-equiv="));
  CKT_HAS_NONE(h, "<link", " src=", "url(", "@import");
  ck_assert_ptr_nonnull(strstr(h, "Content-Security-Policy\" content=\"default-src 'none'"));
  /* Print CSS: no sticky header, colours kept. */
  CKT_HAS_ALL(h, "@media print{", "#case-table thead{position:static}", "print-color-adjust:exact");
  gdn_free(h);
}
END_TEST

START_TEST(hostile_strings) {
  json_t *cases = json_object_get(doc, "cases");
  json_t *c = json_array_get(cases, 29);
  json_object_set_new(c, "id", json_string("<script>alert(1)</script>&\"'"));
  json_t *in = json_array_get(json_object_get(doc, "inputs"), 0);
  json_object_set_new(in, "name", json_string("</td><img src=x onerror=alert(2)>"));
  json_object_set_new(in, "path", json_string("a\"b'c<d>&e"));
  json_object_set_new(doc, "command", json_string("gdn-parity --json '<!--' \"x\" & y"));
  json_object_set_new(doc, "git_commit", json_string("<i>"));
  json_object_set_new(json_object_get(doc, "policy"), "name", json_string("p\"><svg onload=x>"));
  json_t *k = json_array_get(json_object_get(json_object_get(c, "tolerance"), "checks"), 1);
  json_object_set_new(k, "reason", json_string("<b>bold</b> & \"quoted\""));
  json_object_set_new(k, "name", json_string("<u>check</u>"));
  json_t *u = json_array_get(json_object_get(c, "upstream"), 0);
  json_object_set_new(u, "detail", json_string("\" onmouseover=\"alert(3)"));
  json_object_set_new(json_object_get(c, "impls"), "<fixture out>",
                      json_pack("{sb}", "pass", 1));
  char *h = render(doc, NULL);
  CKT_HAS_NONE(h, "<script>alert", "<img", "<svg onload", "<b>bold", "<u>check", "<i>", "<fixture", "\" onmouseover",
              "'<!--'");
  ck_assert_uint_eq(count(h, "<script"), 2); /* ours only */
  CKT_HAS_ALL(h, "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;",
              "&lt;/td&gt;&lt;img src=x onerror=alert(2)&gt;", "&quot; onmouseover=&quot;alert(3)");
  ck_assert_ptr_nonnull(strstr(h, "&lt;fixture out&gt;")); /* the fixture-outputs column */
  check_all_svg(h);
  gdn_free(h);
}
END_TEST

START_TEST(deterministic) {
  json_t *a = sample_doc_realistic(), *b = sample_doc_realistic();
  size_t na, nb;
  char *ha = render(a, &na), *hb = render(b, &nb);
  ck_assert_uint_eq(na, nb);
  ck_assert(!memcmp(ha, hb, na));
  gdn_free(ha);
  gdn_free(hb);
  json_decref(a);
  json_decref(b);
}
END_TEST

START_TEST(no_cases) {
  page_doc_use(json_pack("{ss ss sb s[]}", "tool", "gdn-parity", "version", "0.1.0", "pass", 1, "cases"));
  char *h = render(doc, NULL);
  CKT_HAS_ALL(h, "No cases were run.", "PASS</div>");
  /* Every figure is there, with a note instead of an empty axis. */
  for (size_t i = 0; i < 5; i++) {
    ck_assert(!section_has(h, PLOTS[i], "</figure>", "<svg"));
    ck_assert(section_has(h, PLOTS[i], "</figure>", "class=\"no-data\""));
  }
  ck_assert_ptr_nonnull(strstr(h, "id=\"case-table\""));
  gdn_free(h);
}
END_TEST

START_TEST(no_oracle) {
  json_object_del(doc, "oracle");
  json_t *cases = json_object_get(doc, "cases");
  for (size_t i = 0; i < json_array_size(cases); i++) {
    json_t *c = json_array_get(cases, i);
    json_object_del(c, "impls");
    /* Judged on affine-prefix vs scan only. */
    json_t *checks = json_object_get(json_object_get(c, "tolerance"), "checks");
    while (json_array_size(checks) > 1) json_array_remove(checks, 0);
  }
  sample_doc_refresh_verdict(doc);
  char *h = render(doc, NULL);
  ck_assert(section_has(h, "environment", "</section>", "<b>none</b> (--oracle none)"));
  ck_assert(section_has(h, "plot-heatmap", "</figure>", "No oracle errors in this run"));
  ck_assert(section_has(h, "plot-devices", "</figure>", "rel_fro of o, affine-prefix vs scan"));
  ck_assert(section_has(h, "plot-devices", "</figure>", "<svg"));
  /* The oracle columns are shown empty, not invented. */
  ck_assert_ptr_nonnull(strstr(h, "<td class=\"num na\" data-v=\"\">\xE2\x80\x94</td>"));
  check_all_svg(h);
  gdn_free(h);
}
END_TEST

/* Overwrites a profile series of case i with values v (repeated). */
static void set_profile(json_t *doc, size_t i, const char *series, const double *v, size_t n) {
  json_t *pr = json_object_get(json_array_get(json_object_get(doc, "cases"), i), "profile");
  size_t m = json_array_size(json_object_get(pr, "t0"));
  json_t *a = json_array();
  for (size_t k = 0; k < m; k++) json_array_append_new(a, report_num_to_json(v[k % n]));
  json_object_set_new(pr, series, a);
}

START_TEST(edge_profiles) {
  /* Case 29 is the worst (its profile is the open plot): zeros, NaN, +inf,
   * and 33 decades in the same plot. */
  double zeros[] = {0}, mixed[] = {0, NAN, 1e-30, INFINITY, 1e3, -INFINITY, 5e-7};
  set_profile(doc, 29, "scan", zeros, 1);
  set_profile(doc, 29, "affine-prefix", mixed, 7);
  /* Case 11's group: a one-block profile. */
  json_t *c = json_array_get(json_object_get(doc, "cases"), 20);
  json_object_set_new(json_object_get(c, "profile"), "t0", json_pack("[i]", 0));
  json_object_set_new(json_object_get(c, "profile"), "scan", json_pack("[f]", 3e-7));
  json_object_del(json_object_get(c, "profile"), "affine-prefix");
  json_object_del(json_object_get(c, "profile"), "affine_vs_scan");
  json_object_del(json_object_get(c, "profile"), "ref_max_abs");
  /* NaN and infinite metrics in the table (it shows rel_fro and the median ULP). */
  json_t *o = json_object_get(json_object_get(json_object_get(json_array_get(
      json_object_get(doc, "cases"), 3), "impls"), "scan"), "o");
  json_object_set_new(o, "median_ulp", json_string("nan"));
  json_object_set_new(o, "rel_fro", json_string("inf"));
  char *h = render(doc, NULL);
  check_all_svg(h);
  ck_assert(section_has(h, "plot-profile", "</figure>", "drawn at the floor"));
  ck_assert(section_has(h, "plot-profile", "</figure>", "Non-finite errors are marked"));
  ck_assert(section_has(h, "plot-profile", "</figure>", "affine-prefix vs oracle: not a number"));
  CKT_HAS_ALL(h,
      "<td class=\"num nonfinite\" data-v=\"nan\">nan</td>",
      "<td class=\"num nonfinite\" data-v=\"inf\">inf</td>");
  gdn_free(h);
}
END_TEST

START_TEST(one_length_one_device) {
  json_t *cases = page_doc_use(sample_doc_many(6, 1, 1));
  for (size_t i = 0; i < json_array_size(cases); i++) {
    json_t *c = json_array_get(cases, i);
    json_object_set_new(json_object_get(c, "shape"), "T", json_integer(4096));
    json_object_set_new(c, "devices", json_integer(4));
  }
  char *h = render(doc, NULL);
  ck_assert(section_has(h, "plot-length", "</figure>", "same sequence length (T = 4096)"));
  ck_assert(!section_has(h, "plot-length", "</figure>", "<svg"));
  ck_assert(section_has(h, "plot-devices", "</figure>", "Every case runs on 4 devices"));
  ck_assert(section_has(h, "plot-heatmap", "</figure>", "<svg")); /* one cell still informs */
  check_all_svg(h);
  gdn_free(h);
}
END_TEST

/* Shard, solve and packing: stated once when shared, per case where they
 * vary; a seam with padding before it is drawn as its own kind (class
 * "seam padded", a legend entry, the caption's count, the table's column),
 * and a document without padded seams has none (control). */
START_TEST(modes_and_padded_seams) {
  json_t *cases = page_doc_use(sample_doc_many(3, 0, 1));
  for (size_t i = 0; i < 3; i++) {
    json_t *c = json_array_get(cases, i);
    json_object_set_new(c, "shard", json_string("tokens"));
    json_object_set_new(c, "solve", json_string("substitution"));
  }
  size_t len;
  char *h = render(doc, &len);
  ck_assert_ptr_nonnull(strstr(h, "Modes every case shares: shard tokens, solve substitution."));
  CKT_HAS_NONE(h, "The prefix column adds", "class=\"seam padded\"", "seam after padding");
  gdn_free(h);
  json_t *c0 = NULL, *seams = NULL;
  for (size_t i = 0; i < 3 && !c0; i++)
    if (json_array_size(json_object_get(json_array_get(cases, i), "seams")))
      c0 = json_array_get(cases, i), seams = json_object_get(c0, "seams");
  ck_assert_ptr_nonnull(c0);
  json_object_set_new(c0, "shard", json_string("chunks"));
  json_object_set_new(c0, "packing", json_string("reset"));
  json_object_set_new(json_array_get(seams, 0), "pad_before", json_integer(7));
  h = render(doc, &len);
  CKT_HAS_ALL(h, "Modes every case shares: solve substitution.", "The prefix column adds",
              " \xC2\xB7 chunks \xC2\xB7 reset</td>", " \xC2\xB7 tokens</td>",
              "shard <code>tokens</code> (2 cases), <code>chunks</code> (1 case)");
  ck_assert_uint_eq(count(h, "class=\"seam padded\""), 1);
  CKT_HAS_ALL(h, "seam after padding", "ends in 7 padding tokens", "<td class=\"num\">7</td></tr>");
  check_all_svg(h);
  ck_assert_ptr_null(strstr(h, "; packing: "));
  gdn_free(h);
  /* an external output's matched packing is named beside its verdict */
  json_t *attrs = json_pack("{ss}", "packing_matched", "reset");
  json_object_set_new(json_object_get(c0, "impls"), "tpu_cp",
                      json_pack("{s{sf} sb so}", "o", "rel_fro", 9e-3, "pass", 0, "attrs", attrs));
  json_object_set_new(c0, "pass", json_false());
  json_object_set_new(doc, "pass", json_false());
  h = render(doc, &len);
  ck_assert_ptr_nonnull(strstr(h, "tpu_cp (o rel_fro 0.009; packing: reset)"));
  gdn_free(h);
}
END_TEST

START_TEST(many_cases_and_long_profiles) {
  /* 600 cases with profiles: the page stays a few MB at most. */
  page_doc_use(sample_doc_many(600, 40, 1));
  size_t len;
  char *h = render(doc, &len);
  ck_assert_uint_lt(len, 4u << 20);
  ck_assert_uint_eq(count(h, "<tr id=\"case-"), 600);
  /* Profiles beyond the cap are not plotted, and the page says so. */
  check_all_svg(h);
  gdn_free(h);
  /* One case with a 200,000-block profile: thinned to the point cap. */
  page_doc_use(sample_doc_many(1, 1, 1));
  json_t *pr = json_object_get(json_array_get(json_object_get(doc, "cases"), 0), "profile");
  const size_t NB = 200000;
  json_t *t0 = json_array(), *sc = json_array();
  for (size_t i = 0; i < NB; i++) {
    json_array_append_new(t0, json_integer((json_int_t)(i * 64)));
    json_array_append_new(sc, json_real(1e-7 * (1 + (double)(i % 97) / 97)));
  }
  json_object_clear(pr);
  json_object_set_new(pr, "block", json_integer(64));
  json_object_set_new(pr, "t0", t0);
  json_object_set_new(pr, "scan", sc);
  json_object_set_new(json_object_get(json_array_get(json_object_get(doc, "cases"), 0), "shape"),
                      "T", json_integer((json_int_t)(NB * 64)));
  json_object_set_new(json_array_get(json_object_get(doc, "cases"), 0), "seams", json_array());
  h = render(doc, &len);
  ck_assert_uint_lt(len, 512u << 10);
  ck_assert(section_has(h, "plot-profile", "</figure>", "each point is the max over 400 blocks"));
  size_t pl;
  const char *p = section(h, "svg-profile-0", "</svg>", &pl);
  const char *poly = strstr(p, "<polyline points=\"");
  ck_assert_ptr_nonnull(poly);
  const char *pe = strchr(poly + 18, '"');
  size_t pts = 0;
  for (const char *q = poly + 18; q < pe; q++) pts += *q == ',';
  ck_assert_uint_eq(pts, 500); /* REPORT_PLOTS_MAX_POINTS */
  check_all_svg(h);
  gdn_free(h);
}
END_TEST

START_TEST(write_atomic) {
  const char *dir = test_tmpdir(), *path = test_path_in(dir, "report.html");
  /* A failing allocation anywhere: NOMEM, no file, no temporary. */
  ck_assert_int_ge(test_write_alloc_failures(report_html_write, doc, dir, path, NULL), 5);
  gdn_error e;
  gdn_error_init(&e);
  /* A document the writer refuses leaves the previous report in place. */
  json_object_set_new(doc, "pass", json_true());
  ck_assert_int_eq(report_html_write(doc, path, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "pass: is true but at least one case failed"));
  size_t n;
  char *old = test_read_file(path, &n);
  ck_assert(n > 1000 && strstr(old, "data-verdict=\"fail\""));
  free(old);
}
END_TEST

/* The ULP histogram's bin labels (the <text> under the axis: anchored in
 * the middle, no class, the row with the most of them) never overlap: the
 * distance of neighbours' centres is at least the mean of their widths at
 * 6.5 px a character (a digit of the plot's 12 px sans-serif font is about
 * 6.7 px wide).  All 20 labels at once (the old thinning, above 24 bins
 * only) put 7-character labels 19 px apart and fail it.  The histograms
 * get gdn-parity's 20 edges, 0, 0.5, 1, 2, ..., 2^17 (parity_metrics.h). */
START_TEST(ulp_labels_do_not_overlap) {
  json_t *d = json_deep_copy(doc), *cases = json_object_get(d, "cases");
  for (size_t i = 0; i < json_array_size(cases); i++) {
    json_t *edges = json_array(), *counts = json_array();
    for (int k = 0; k < 20; k++) {
      json_array_append_new(edges, json_real(k ? ldexp(1, k - 2) : 0));
      json_array_append_new(counts, json_integer(100 + k));
    }
    json_t *u = json_pack("{so so}", "edges", edges, "scan", counts);
    json_object_set_new(u, "affine-prefix", json_deep_copy(counts));
    json_object_set_new(json_array_get(cases, i), "ulp_histogram", u);
  }
  char *h = render(d, NULL);
  json_decref(d);
  size_t len;
  const char *svg = section(h, "svg-ulp", "</svg>", &len);
  double xs[64], ys[64];
  size_t ls[64], n = 0;
  for (const char *p = strstr(svg, "<text x=\""); p && p < svg + len && n < 64; p = strstr(p + 1, "<text x=\"")) {
    double x, y;
    if (sscanf(p, "<text x=\"%lf\" y=\"%lf\"", &x, &y) != 2) continue;
    const char *gt = strchr(p, '>'), *end = strstr(p, "</text>");
    if (!strstr(p, "text-anchor=\"middle\">") || strstr(p, "text-anchor=\"middle\">") > gt) continue;
    size_t chars = 0; /* characters, not bytes: the last label's >= is 3 bytes */
    for (const char *c = gt + 1; c < end; c++) chars += ((unsigned char)*c & 0xC0) != 0x80;
    xs[n] = x, ys[n] = y, ls[n++] = chars;
  }
  double row = 0;
  size_t best = 0;
  for (size_t i = 0; i < n; i++) {
    size_t k = 0;
    for (size_t j = 0; j < n; j++) k += ys[j] == ys[i];
    if (k > best) best = k, row = ys[i];
  }
  ck_assert_msg(best >= 3, "only %zu bin labels", best);
  double px = -1e9;
  size_t pl = 0;
  for (size_t i = 0; i < n; i++) {
    if (ys[i] != row) continue;
    if (pl) ck_assert_msg(xs[i] - px >= 6.5 * (double)(ls[i] + pl) / 2, "labels at %g and %g overlap", px, xs[i]);
    px = xs[i], pl = ls[i];
  }
  free(h);
}
END_TEST

PAGE_DOC_MAIN("html", "html", 120, realistic_structure, self_contained, hostile_strings, deterministic, no_cases,
    no_oracle, edge_profiles, one_length_one_device, many_cases_and_long_profiles, modes_and_padded_seams,
    write_atomic, ulp_labels_do_not_overlap)
