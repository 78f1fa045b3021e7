#include <errno.h>
#include <string.h>

#include "gdn_path.h"
#include "report_doc.h"
#include "report_json.h"
#include "report_recur.h"

int report_json_read(const char *path, json_t **doc, gdn_error *e) {
  *doc = NULL;
  json_error_t je;
  /* Duplicate keys would make "which value did the report show" ambiguous. */
  FILE *f;
  int err = 0;
  gdn_error sub;
  gdn_error_init(&sub);
  if (gdn_path_fopen_input("the results document", path, &f, &err, &sub)) { /* never blocks on a FIFO */
    if (err) return gdn_error_set(e, GDN_ERR_INPUT, "cannot read results document %s: %s", path, strerror(err));
    *e = sub;
    return e->code;
  }
  json_t *j = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
  fclose(f);
  if (!j) {
    if (je.line < 0) /* could not open or read: jansson says why */
      return gdn_error_set(e, GDN_ERR_INPUT, "cannot read results document %s: %s", path, je.text);
    return gdn_error_set(e, GDN_ERR_INPUT, "%s:%d:%d: not a valid JSON document: %s", path, je.line,
                         je.column, je.text);
  }
  /* a recurrence's document (gdn-parity --recurrence NAME) has its own schema */
  int rc = report_recur_is(j) ? report_recur_validate(j, path, e) : report_doc_validate(j, path, e);
  if (!rc && !report_recur_is(j)) rc = report_doc_validate_meaning(j, path, e);
  if (rc) {
    json_decref(j);
    return rc;
  }
  *doc = j;
  return GDN_OK;
}
