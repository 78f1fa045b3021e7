/* The JSON writer: round trip through jansson, 17 significant digits,
 * non-finite numbers as strings, the fixed key order whatever the insertion
 * order, byte-identical output, atomic writes. */
#include <check.h>
#include <math.h>

#include "gdn_alloc.h"
#include "report_json.h"
#include "report_num.h"
#include "page_doc.h"
#include "sample_doc.h"
#include "test_util.h"
#include "../check_runner.h"
#include "../check_text.h"

static char *render(const json_t *doc) { return test_render(report_json_render, doc, NULL); }

START_TEST(round_trip) {
  const char *path = test_path_in(test_tmpdir(), "results.json");
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(report_json_write(doc, path, &e), GDN_OK);
  json_error_t je;
  json_t *back = json_load_file(path, 0, &je);
  ck_assert_msg(back != NULL, "%s", je.text);
  /* json_equal compares reals exactly: 17 digits read back bit for bit. */
  ck_assert(json_equal(doc, back));
  json_t *via = NULL;
  ck_assert_int_eq(report_json_read(path, &via, &e), GDN_OK);
  ck_assert(json_equal(doc, via));
  json_decref(via);
  json_decref(back);
}
END_TEST

START_TEST(digits) {
  page_doc_use(sample_doc_many(1, 0, 0));
  json_t *m = json_object_get(json_object_get(json_object_get(json_array_get(
                                  json_object_get(doc, "cases"), 0), "impls"), "scan"), "o");
  json_object_set_new(m, "max_abs", json_real(0.1));
  json_object_set_new(m, "rel_fro", json_real(1.0 / 3.0));
  json_object_set_new(m, "max_ulp", json_real(1.0));
  json_object_set_new(m, "median_ulp", json_real(4.9406564584124654e-324)); /* least subnormal */
  json_object_set_new(m, "max_rel", json_real(1.7976931348623157e308));
  char *s = render(doc);
  CKT_HAS_ALL(s, "\"max_abs\": 0.10000000000000001", "\"rel_fro\": 0.33333333333333331");
  /* An integral real stays a real, so the type survives the round trip. */
  ck_assert_ptr_nonnull(strstr(s, "\"max_ulp\": 1.0"));
  json_t *back = json_loads(s, 0, NULL);
  ck_assert(json_equal(doc, back));
  /* Indent 2 and a final newline. */
  ck_assert(!strncmp(s, "{\n  \"tool\": \"gdn-parity\",\n", 26));
  ck_assert(s[strlen(s) - 1] == '\n' && s[strlen(s) - 2] == '}');
  json_decref(back);
  gdn_free(s);
}
END_TEST

START_TEST(non_finite) {
  page_doc_use(sample_doc_many(1, 0, 0));
  json_t *c = json_array_get(json_object_get(doc, "cases"), 0);
  json_t *o = json_object_get(json_object_get(json_object_get(c, "impls"), "affine-prefix"), "o");
  json_object_set_new(o, "rel_fro", report_num_to_json(NAN));
  json_object_set_new(o, "max_ulp", report_num_to_json(INFINITY));
  json_object_set_new(o, "max_abs", report_num_to_json(-INFINITY));
  /* jansson refuses non-finite reals: the document can only hold strings. */
  ck_assert_ptr_null(json_real(NAN));
  char *s = render(doc);
  CKT_HAS_ALL(s, "\"rel_fro\": \"nan\"", "\"max_ulp\": \"inf\"", "\"max_abs\": \"-inf\"");
  json_t *back = json_loads(s, 0, NULL);
  json_t *bo = json_object_get(json_object_get(json_object_get(
      json_array_get(json_object_get(back, "cases"), 0), "impls"), "affine-prefix"), "o");
  double v;
  ck_assert(report_num_get(json_object_get(bo, "rel_fro"), &v) && isnan(v));
  ck_assert(report_num_get(json_object_get(bo, "max_ulp"), &v) && v == INFINITY);
  ck_assert(report_num_get(json_object_get(bo, "max_abs"), &v) && v == -INFINITY);
  json_t *other = json_string("infinity");
  ck_assert(!report_num_get(other, &v)); /* only the three spellings */
  json_decref(other);
  json_decref(back);
  gdn_free(s);
}
END_TEST

/* The same content inserted in reverse key order, recursively. */
static json_t *reversed(const json_t *j) {
  if (json_is_object(j)) {
    const char *keys[256];
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)j, k, v) keys[n++] = k;
    json_t *o = json_object();
    while (n--) json_object_set_new(o, keys[n], reversed(json_object_get(j, keys[n])));
    return o;
  }
  if (json_is_array(j)) {
    json_t *a = json_array();
    for (size_t i = 0; i < json_array_size(j); i++)
      json_array_append_new(a, reversed(json_array_get(j, i)));
    return a;
  }
  return json_deep_copy(j);
}

static size_t pos(const char *s, const char *needle) {
  const char *p = strstr(s, needle);
  ck_assert_msg(p != NULL, "\"%s\" not in the output", needle);
  return (size_t)(p - s);
}

/* Each phrase of the NULL-ended list found in s before the next one. */
static void in_order(const char *s, const char *const *phrases) {
  for (size_t i = 0; phrases[i] && phrases[i + 1]; i++)
    ck_assert_msg(pos(s, phrases[i]) < pos(s, phrases[i + 1]), "'%s' not before '%s'", phrases[i], phrases[i + 1]);
}

START_TEST(key_order) {
  json_object_set_new(doc, "zz_extra", json_string("by someone else"));
  json_object_set_new(doc, "aa_extra", json_integer(1));
  json_t *rev = reversed(doc);
  /* The reversal really did change the insertion order... */
  ck_assert_str_eq(json_object_iter_key(json_object_iter(rev)), "aa_extra");
  char *a = render(doc), *b = render(rev);
  /* ...and the output does not depend on it. */
  ck_assert_str_eq(a, b);
  in_order(a, (const char *[]){"\"tool\"", "\"version\"", "\"git_commit\"", NULL});
  in_order(a, (const char *[]){"\"pass\": false", "\"exit_status\"", "\"oracle\"", NULL});
  /* Unknown keys after the known ones, in byte order. */
  in_order(a, (const char *[]){"\"inputs\"", "\"cases\"", "\"timing\"", "\"aa_extra\"", "\"zz_extra\"", NULL});
  /* Inside a case: id first, pass last; scan before affine-prefix; METRICS
   * in the documented order. */
  size_t c0 = pos(a, "\"cases\": [");
  const char *cs = a + c0;
  in_order(cs, (const char *[]){"\"id\"", "\"input\"", "\"shape\"", NULL});
  in_order(cs, (const char *[]){"\"impls\"", "\"affine_vs_scan\"", NULL});
  in_order(cs, (const char *[]){"\"scan\": {", "\"affine-prefix\": {", NULL});
  in_order(cs, (const char *[]){"\"max_abs\"", "\"rel_fro\"", NULL});
  in_order(cs, (const char *[]){"\"tolerance\"", "\"upstream\"", NULL});
  in_order(cs, (const char *[]){"\"ulp_histogram\"", "\"seconds\"", "\"pass\": true\n    }", NULL});
  gdn_free(a);
  gdn_free(b);
  json_decref(rev);
}
END_TEST

START_TEST(deterministic) {
  json_t *d1 = sample_doc_realistic(), *d2 = sample_doc_realistic();
  char *a = render(d1), *b = render(d2);
  ck_assert_str_eq(a, b);
  gdn_free(a);
  gdn_free(b);
  json_decref(d1);
  json_decref(d2);
}
END_TEST

START_TEST(atomic_failures) {
  const char *dir = test_tmpdir(), *path = test_path_in(dir, "results.json");
  test_write_text(path, "previous run\n");
  gdn_error e;
  gdn_error_init(&e);
  /* An invalid document: refused, the previous file untouched. */
  json_t *bad = sample_doc_realistic();
  json_object_del(bad, "cases");
  ck_assert_int_eq(report_json_write(bad, path, &e), GDN_ERR_INPUT);
  CKT_HAS_ALL(e.msg, path, "cases: missing");
  char *now = test_read_file(path, NULL);
  ck_assert_str_eq(now, "previous run\n");
  free(now);
  /* A missing folder: the user's input (exit 2, gdn_atomic.h), naming the
   * path. */
  char missing[700];
  snprintf(missing, sizeof missing, "%s/no/such/dir/results.json", dir);
  ck_assert_int_eq(report_json_write(doc, missing, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, missing));
  /* Every allocation of ours that can fail: NOMEM, nothing written, no
   * temporary left. */
  ck_assert_int_ge(test_write_alloc_failures(report_json_write, doc, dir, path, "previous run\n"), 1);
  now = test_read_file(path, NULL);
  ck_assert(now[0] == '{');
  free(now);
  json_decref(bad);
}
END_TEST

PAGE_DOC_MAIN("json", "json", 60, round_trip, digits, non_finite, key_order, deterministic, atomic_failures)
