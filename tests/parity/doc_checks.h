/* Reading a case's tolerance checks in a results document (header-only,
 * static; the kappa and localized-statistic tests look them up by rule,
 * subject and tensor). */
#ifndef DOC_CHECKS_H
#define DOC_CHECKS_H

#include <jansson.h>
#include <string.h>

/* The check of `rule` for subject `subj` on `tensor` in case c (NULL if none). */
static inline json_t *find_check(json_t *c, const char *rule, const char *subj, const char *tensor) {
  json_t *checks = json_object_get(json_object_get(c, "tolerance"), "checks"), *k;
  size_t i;
  json_array_foreach(checks, i, k) {
    if (!strcmp(json_string_value(json_object_get(k, "rule")), rule) &&
        !strcmp(json_string_value(json_object_get(k, "subject")), subj) &&
        !strcmp(json_string_value(json_object_get(k, "tensor")), tensor))
      return k;
  }
  return NULL;
}

#endif
