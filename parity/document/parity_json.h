/* parity_json: the results document's JSON (docs/results-json.md).
 *
 * The one place that turns result types into JSON: a case
 * (parity_json_case), an input set (parity_json_input), a metrics object.
 * Key order is the order of the calls here and is part of the format:
 * reproducible runs are compared byte for byte.  Every function returns a
 * new reference, or NULL when jansson runs out of memory.
 */
#ifndef PARITY_JSON_H
#define PARITY_JSON_H

#include <jansson.h>

#include "gdn_shape.h"
#include "parity_metrics.h"
#include "parity_result.h"
#include "parity_tensor.h"

/* A number, or the string "inf" / "-inf" / "nan" (JSON has no such numbers). */
json_t *parity_json_real(double x);
json_t *parity_json_shape(const gdn_shape *s);
/* METRICS object; the worst position is named by the tensor's index names. */
json_t *parity_json_tensor_metrics(const parity_metrics *m, const parity_tensor *t);
/* As above with `o_like` choosing the o or the ht row. */
json_t *parity_json_metrics(const parity_metrics *m, int o_like);
/* cases[] entry; `reproducible` leaves out the timing. */
json_t *parity_json_case(const parity_case_result *r, int reproducible);
/* inputs[] entry. */
json_t *parity_json_input(const parity_input_result *r);
/* Adds v under key, stealing the reference (json_object_set_new) -- returns
 * -1 if v is NULL (allocation failure inside jansson). */
int parity_json_set(json_t *obj, const char *key, json_t *v);

/* GDN_ERR_INPUT "WHERE: unknown KINDkey "x"" for the first key of obj not in
 * the NULL-terminated `allowed` (kind: "" or "top-level "); GDN_OK otherwise
 * (also for a non-object).  Strict readers use it so a typo in a policy or
 * grid is an error, never a silently ignored setting. */
int parity_json_check_keys(const json_t *obj, const char *const *allowed, const char *where,
                           const char *kind, gdn_error *e);

/* The strict readers' parse of a whole document (policy, grid): duplicate
 * keys refused, a syntax error as GDN_ERR_INPUT "WHAT SOURCE: line L, column
 * C: jansson's text".  *root: a new reference, NULL on error. */
int parity_json_loads(const char *text, const char *what, const char *source, json_t **root, gdn_error *e);

#endif
