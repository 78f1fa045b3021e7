/* The results document's accessors that every reader of a document uses,
 * the audit's included (report_doc.h): below the document's validation
 * (report_doc.c), which validates the audit section in turn. */
#include "report_doc.h"

const char *report_doc_str(const json_t *obj, const char *key) {
  return json_string_value(json_object_get(obj, key));
}

long long report_doc_int(const json_t *obj, const char *key, long long dflt) {
  const json_t *j = json_object_get(obj, key);
  return json_is_integer(j) ? json_integer_value(j) : dflt;
}

int report_doc_bool(const json_t *obj, const char *key, int dflt) {
  const json_t *j = json_object_get(obj, key);
  return json_is_boolean(j) ? json_is_true(j) : dflt;
}
