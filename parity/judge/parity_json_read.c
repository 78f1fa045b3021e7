/* Reading JSON input (parity_json.h): the policy's, grid's and documents'
 * readers use these, below the results writer (parity_json.c). */
#include "parity_json.h"

#include <string.h>

int parity_json_check_keys(const json_t *obj, const char *const *allowed, const char *where,
                           const char *kind, gdn_error *e) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)obj, k, v) {
    int ok = 0;
    for (int i = 0; allowed[i] && !ok; i++) ok = !strcmp(k, allowed[i]);
    if (!ok) return gdn_error_set(e, GDN_ERR_INPUT, "%s: unknown %skey \"%s\"", where, kind, k);
  }
  return GDN_OK;
}

int parity_json_loads(const char *text, const char *what, const char *source, json_t **root, gdn_error *e) {
  json_error_t je;
  *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
  if (!*root)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s %s: line %d, column %d: %s", what, source, je.line, je.column,
                         je.text);
  return GDN_OK;
}
