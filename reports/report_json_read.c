#include <errno.h>
#include <string.h>

#include "report_doc.h"
#include "report_json.h"

int report_json_read(const char *path, json_t **doc, gdn_error *e) {
  *doc = NULL;
  json_error_t je;
  /* Duplicate keys would make "which value did the report show" ambiguous. */
  json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    if (je.line < 0) /* could not open or read: jansson says why */
      return gdn_error_set(e, GDN_ERR_INPUT, "cannot read results document %s: %s", path, je.text);
    return gdn_error_set(e, GDN_ERR_INPUT, "%s:%d:%d: not a valid JSON document: %s", path, je.line,
                         je.column, je.text);
  }
  int rc = report_doc_validate(j, path, e);
  if (!rc) rc = report_doc_validate_meaning(j, path, e);
  if (rc) {
    json_decref(j);
    return rc;
  }
  *doc = j;
  return GDN_OK;
}
