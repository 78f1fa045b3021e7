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

#endif
