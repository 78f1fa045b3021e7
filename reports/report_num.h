/* report_num: numbers as the results document carries them and as reports
 * print them.
 *
 * The document writes a non-finite number as the string "inf", "-inf" or
 * "nan" (JSON has no such numbers, and jansson cannot hold them as reals), so
 * every reader of a numeric field goes through report_num_get.
 */
#ifndef REPORT_NUM_H
#define REPORT_NUM_H

#include <jansson.h>

#define REPORT_NUM_CHARS 40

/* A JSON integer, real, or one of the strings "inf", "-inf", "nan": stores
 * the value and returns 1.  Anything else (NULL included): returns 0 and
 * leaves *out unchanged. */
int report_num_get(const json_t *v, double *out);

/* The document's representation of v: a real, or the string for a
 * non-finite v.  New reference (NULL only when out of memory). */
json_t *report_num_to_json(double v);

/* v for a reader: `sig` significant digits (1..17), C locale, compact
 * exponent ("1.25e-7", not "1.25e-07"), "0" for zero, and "nan", "inf",
 * "-inf".  Always NUL-terminated within REPORT_NUM_CHARS. */
void report_num_format(char out[REPORT_NUM_CHARS], double v, int sig);

#endif
