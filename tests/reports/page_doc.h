/* The document a reports test renders (header-only, static): `doc`, the
 * realistic sample (sample_doc.h), made before each test and released after
 * it by the test case's checked fixture, so a test neither builds nor frees
 * it; a test that needs another takes it with page_doc_use.  PAGE_DOC_MAIN
 * is CKR_MAIN (tests/check_runner.h) with that fixture. */
#ifndef PAGE_DOC_H
#define PAGE_DOC_H

#include <check.h>
#include <jansson.h>

#include "sample_doc.h"
#include "../check_runner.h"

static json_t *doc;

static void page_doc_make(void) { doc = sample_doc_realistic(); }

static void page_doc_free(void) {
  json_decref(doc);
  doc = NULL;
}

/* other (a new reference, which doc takes) instead of the current doc;
 * its cases array (borrowed), what the tests then edit. */
__attribute__((unused)) static json_t *page_doc_use(json_t *other) {
  json_decref(doc);
  doc = other;
  return json_object_get(doc, "cases");
}

/* The fixture on a test case made elsewhere (a main of its own). */
static inline TCase *page_doc_fixture(TCase *tc) {
  tcase_add_checked_fixture(tc, page_doc_make, page_doc_free);
  return tc;
}

#define PAGE_DOC_MAIN(suite, tcase, timeout_s, ...)                                 \
  int main(void) {                                                                  \
    Suite *ckr_su = suite_create(suite);                                            \
    page_doc_fixture(CKR_TCASE(ckr_su, (tcase), (timeout_s), __VA_ARGS__));         \
    return ckr_run(ckr_su);                                                         \
  }

#endif
