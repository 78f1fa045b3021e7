/* JUnit XML: parsed back with libxml2 and validated against the
 * Jenkins/Ant-style schema (junit.xsd, path in $JUNIT_XSD); counts match
 * the document; a failure's message carries the deciding numbers; hostile
 * case ids survive escaping exactly. */
#include <check.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlschemas.h>
#include <math.h>

#include "gdn_alloc.h"
#include "report_junit.h"
#include "report_num.h"
#include "page_doc.h"
#include "sample_doc.h"
#include "test_util.h"
#include "../check_runner.h"
#include "../check_text.h"

static xmlSchemaPtr schema;

static void load_schema(void) {
  const char *xsd = getenv("JUNIT_XSD");
  ck_assert_msg(xsd != NULL, "JUNIT_XSD is not set (meson sets it)");
  xmlSchemaParserCtxtPtr pc = xmlSchemaNewParserCtxt(xsd);
  schema = xmlSchemaParse(pc);
  xmlSchemaFreeParserCtxt(pc);
  ck_assert_msg(schema != NULL, "cannot parse %s", xsd);
}

/* Renders, parses (no network, no entities) and validates. */
static xmlDocPtr render_valid(const json_t *doc) {
  size_t len;
  char *text = test_render(report_junit_render, doc, &len);
  xmlDocPtr x = xmlReadMemory(text, (int)len, "junit.xml", "UTF-8", XML_PARSE_NONET);
  ck_assert_msg(x != NULL, "not well-formed XML");
  if (!schema) load_schema();
  xmlSchemaValidCtxtPtr vc = xmlSchemaNewValidCtxt(schema);
  int v = xmlSchemaValidateDoc(vc, x);
  xmlSchemaFreeValidCtxt(vc);
  ck_assert_msg(v == 0, "junit.xml does not validate against junit.xsd");
  gdn_free(text);
  return x;
}

static xmlNodePtr child(xmlNodePtr n, const char *name) {
  for (xmlNodePtr c = n ? n->children : NULL; c; c = c->next)
    if (c->type == XML_ELEMENT_NODE && !strcmp((const char *)c->name, name)) return c;
  return NULL;
}

static char *attr(xmlNodePtr n, const char *name) {
  return (char *)xmlGetProp(n, (const xmlChar *)name);
}

static long attr_long(xmlNodePtr n, const char *name) {
  char *v = attr(n, name);
  ck_assert_msg(v != NULL, "no %s attribute", name);
  long x = strtol(v, NULL, 10);
  xmlFree(v);
  return x;
}

START_TEST(realistic) {
  xmlDocPtr x = render_valid(doc);
  xmlNodePtr root = xmlDocGetRootElement(x);
  ck_assert_str_eq((const char *)root->name, "testsuites");
  xmlNodePtr suite = child(root, "testsuite");
  size_t n = json_array_size(json_object_get(doc, "cases"));
  ck_assert_int_eq(attr_long(suite, "tests"), (long)n);
  ck_assert_int_eq(attr_long(suite, "failures"), 1);
  ck_assert_int_eq(attr_long(suite, "errors"), 0);
  ck_assert_int_eq(attr_long(root, "tests"), (long)n);
  /* One testcase per case, in document order, named by the case id. */
  size_t k = 0, failures = 0;
  for (xmlNodePtr c = suite->children; c; c = c->next) {
    if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "testcase")) continue;
    const json_t *jc = json_array_get(json_object_get(doc, "cases"), k++);
    char *name = attr(c, "name"), *cls = attr(c, "classname"), *t = attr(c, "time");
    ck_assert_str_eq(name, json_string_value(json_object_get(jc, "id")));
    /* Input 2 is "qwen3.5 layer 7 <&\"quoted\">": dots and the rest
     * flattened so CI viewers do not invent packages. */
    long in = (long)json_integer_value(json_object_get(jc, "input"));
    ck_assert_str_eq(cls, in == 2 ? "gdn-parity.qwen3_5_layer_7_quoted_" : "gdn-parity.synthetic_seed_0");
    char want_t[32];
    snprintf(want_t, sizeof want_t, "%.3f", json_real_value(json_object_get(jc, "seconds")));
    ck_assert_str_eq(t, want_t);
    xmlNodePtr f = child(c, "failure");
    ck_assert_int_eq(f != NULL, !json_is_true(json_object_get(jc, "pass")));
    if (f) {
      failures++;
      char *msg = attr(f, "message"), *type = attr(f, "type");
      /* The deciding numbers: check, metric, value, limit. */
      CKT_HAS_ALL(msg, "affine-prefix o vs oracle: rel_fro = 1.00867e-6", "exceeds limit 6e-7");
      ck_assert_str_eq(type, "tolerance");
      xmlChar *body = xmlNodeGetContent(f);
      /* Every check, the deciding one marked, and the upstream verdicts. */
      CKT_HAS_ALL((char *)body,
          "* FAIL affine-prefix o vs oracle",
          "  pass scan o vs oracle",
          "upstream pass: MaxText atol=rtol=1e-6",
          "limit: builtin-v1: the scan's allowance");
      xmlFree(body);
      xmlFree(msg);
      xmlFree(type);
    }
    xmlFree(name);
    xmlFree(cls);
    xmlFree(t);
  }
  ck_assert_uint_eq(k, n);
  ck_assert_uint_eq(failures, 1);
  /* Suite time: timing.seconds.total. */
  char *st = attr(suite, "time");
  ck_assert_str_eq(st, "45.000");
  xmlFree(st);
  xmlFreeDoc(x);
}
END_TEST

START_TEST(hostile_names_and_errors) {
  json_t *cases = page_doc_use(sample_doc_many(4, 2, 0));
  const char *id = "a<b>&\"c\" 'd' \xC3\xA9\xE2\x88\x9A |]]> --";
  json_object_set_new(json_array_get(cases, 0), "id", json_string(id));
  json_object_set_new(json_array_get(cases, 1), "id", json_string("ctl\x01" "char"));
  /* Case 3: could not be evaluated -> <error>, counted in errors. */
  json_object_set_new(json_array_get(cases, 3), "error",
                      json_string("oracle certified 12 bits < 24 needed for <float32>"));
  json_object_del(json_array_get(cases, 3), "seconds"); /* time 0 then */
  sample_doc_refresh_verdict(doc);
  xmlDocPtr x = render_valid(doc);
  xmlNodePtr suite = child(xmlDocGetRootElement(x), "testsuite");
  ck_assert_int_eq(attr_long(suite, "tests"), 4);
  ck_assert_int_eq(attr_long(suite, "failures"), 2);
  ck_assert_int_eq(attr_long(suite, "errors"), 1);
  xmlNodePtr tc[4];
  size_t k = 0;
  for (xmlNodePtr c = suite->children; c; c = c->next)
    if (c->type == XML_ELEMENT_NODE && !strcmp((const char *)c->name, "testcase")) tc[k++] = c;
  ck_assert_uint_eq(k, 4);
  char *name = attr(tc[0], "name");
  ck_assert_str_eq(name, id); /* exact round trip through the escaping */
  xmlFree(name);
  name = attr(tc[1], "name");
  ck_assert_str_eq(name, "ctl\xEF\xBF\xBD" "char"); /* XML cannot carry U+0001 */
  xmlFree(name);
  xmlNodePtr err = child(tc[3], "error");
  ck_assert_ptr_nonnull(err);
  ck_assert_ptr_null(child(tc[3], "failure"));
  char *msg = attr(err, "message");
  ck_assert_str_eq(msg, "oracle certified 12 bits < 24 needed for <float32>");
  xmlFree(msg);
  char *t = attr(tc[3], "time");
  ck_assert_str_eq(t, "0.000");
  xmlFree(t);
  xmlFreeDoc(x);
}
END_TEST

START_TEST(passing_and_empty) {
  page_doc_use(sample_doc_many(3, 0, 0));
  xmlDocPtr x = render_valid(doc);
  xmlNodePtr suite = child(xmlDocGetRootElement(x), "testsuite");
  ck_assert_int_eq(attr_long(suite, "failures"), 0);
  xmlFreeDoc(x);
  page_doc_use(json_pack("{ss ss sb s[]}", "tool", "gdn-parity", "version", "0.1.0", "pass", 1, "cases"));
  x = render_valid(doc);
  suite = child(xmlDocGetRootElement(x), "testsuite");
  ck_assert_int_eq(attr_long(suite, "tests"), 0);
  xmlFreeDoc(x);
}
END_TEST

START_TEST(write_atomic) {
  const char *dir = test_tmpdir(), *path = test_path_in(dir, "junit.xml");
  /* nothing half-written */
  ck_assert_int_ge(test_write_alloc_failures(report_junit_write, doc, dir, path, NULL), 1);
  /* Same document, same bytes. */
  char *a = test_read_file(path, NULL);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(report_junit_write(doc, path, &e), GDN_OK);
  char *b = test_read_file(path, NULL);
  ck_assert_str_eq(a, b);
  free(a);
  free(b);
}
END_TEST

int main(void) {
  Suite *su = suite_create("junit");
  page_doc_fixture(CKR_TCASE(su, "junit", 60, realistic, hostile_names_and_errors, passing_and_empty, write_atomic));
  int nf = ckr_run(su);
  if (schema) xmlSchemaFree(schema);
  xmlCleanupParser();
  return nf;
}
