/* The results document's meaning, beyond its types (report_doc.h):
 * what report_doc_validate's type checks let through but a rebuilt report
 * would present as a verdict. */
#include "report_doc.h"

#include <stdio.h>
#include <string.h>

#include "gdn_text.h"

static int bad(const char *src, gdn_error *e, const char *what) {
  return gdn_error_set(e, GDN_ERR_INPUT, "%s: %s", src, what);
}

/* Every number in a metrics object (and its nested "worst" index) is a
 * size, a distance or an index: never negative. */
static int check_metrics(const json_t *m, const char *path, const char *src, gdn_error *e) {
  const char *k;
  const json_t *x;
  json_object_foreach((json_t *)m, k, x) {
    if (json_is_object(x)) {
      char sub[300];
      snprintf(sub, sizeof sub, "%s.%s", path, k);
      int rc = check_metrics(x, sub, src, e);
      if (rc) return rc;
    } else if (json_is_number(x) && json_number_value(x) < 0) {
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: %s.%s is %g; metrics are never negative", src, path,
                           gdn_text_show(k), json_number_value(x));
    }
  }
  return GDN_OK;
}

static int check_tensors(const json_t *t, const char *path, const char *src, gdn_error *e) {
  static const char *const tensors[] = {"o", "ht"};
  for (int i = 0; i < 2; i++) {
    const json_t *m = json_object_get(t, tensors[i]);
    char p[300];
    snprintf(p, sizeof p, "%s.%s", path, tensors[i]);
    int rc = json_is_object(m) ? check_metrics(m, p, src, e) : GDN_OK;
    if (rc) return rc;
  }
  return GDN_OK;
}

static int check_case(const json_t *c, size_t i, const char *src, gdn_error *e) {
  char p[300];
  const json_t *impls = json_object_get(c, "impls");
  /* A case without results is only honest with its error. */
  if (!json_object_get(c, "error") && (!json_is_object(impls) || json_object_size(impls) == 0)) {
    snprintf(p, sizeof p, "cases[%zu]: no \"impls\" (the case has no results and no error)", i);
    return bad(src, e, p);
  }
  const char *k;
  const json_t *t;
  int rc;
  if (json_is_object(impls)) json_object_foreach((json_t *)impls, k, t) {
      snprintf(p, sizeof p, "cases[%zu].impls.%s", i, gdn_text_show(k));
      if ((rc = check_tensors(t, p, src, e))) return rc;
    }
  snprintf(p, sizeof p, "cases[%zu].affine_vs_scan", i);
  const json_t *avs = json_object_get(c, "affine_vs_scan");
  return json_is_object(avs) ? check_tensors(avs, p, src, e) : GDN_OK;
}

int report_doc_validate_meaning(const json_t *doc, const char *source, gdn_error *e) {
  const char *src = source ? source : "results document";
  const char *tool = json_string_value(json_object_get(doc, "tool"));
  if (!tool || strcmp(tool, "gdn-parity")) {
    char w[300];
    snprintf(w, sizeof w, "tool is '%s', not 'gdn-parity': not a gdn-parity results document",
             gdn_text_show(tool ? tool : ""));
    return bad(src, e, w);
  }
  const json_t *cases = json_object_get(doc, "cases");
  if (json_array_size(cases) == 0)
    return bad(src, e, "cases is empty: a run of no cases has no verdict to rebuild");
  for (size_t i = 0; i < json_array_size(cases); i++) {
    int rc = check_case(json_array_get(cases, i), i, src, e);
    if (rc) return rc;
  }
  return GDN_OK;
}
