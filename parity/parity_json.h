/* parity_json: building the results document (docs/results-json.md). */
#ifndef PARITY_JSON_H
#define PARITY_JSON_H

#include <jansson.h>

#include "gdn_shape.h"
#include "parity_metrics.h"

/* A number, or the string "inf" / "-inf" / "nan" (JSON has no such numbers). */
json_t *parity_json_real(double x);
json_t *parity_json_shape(const gdn_shape *s);
/* METRICS object; `o_like` picks the names of the worst position. */
json_t *parity_json_metrics(const parity_metrics *m, int o_like);
/* Adds v under key, stealing the reference (json_object_set_new) -- returns
 * -1 if v is NULL (allocation failure inside jansson). */
int parity_json_set(json_t *obj, const char *key, json_t *v);

/* GDN_ERR_INPUT "WHERE: unknown KINDkey "x"" for the first key of obj not in
 * the NULL-terminated `allowed` (kind: "" or "top-level "); GDN_OK otherwise
 * (also for a non-object).  Strict readers use it so a typo in a policy or
 * grid is an error, never a silently ignored setting. */
int parity_json_check_keys(const json_t *obj, const char *const *allowed, const char *where,
                           const char *kind, gdn_error *e);

#endif
