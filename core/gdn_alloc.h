/* gdn_alloc: checked allocation with overflow-safe sizes and fault injection.
 *
 * All heap memory of the toolkit's numerical core goes through these, so the
 * out-of-memory paths can be tested as SQLite tests them: a test arms
 * gdn_alloc_fail_after(n) and the n-th following allocation fails.
 * On failure the functions set GDN_ERR_NOMEM with `what` and the byte count
 * in the message and return NULL; they never abort.
 */
#ifndef GDN_ALLOC_H
#define GDN_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_error.h"

/* n bytes, 64-byte aligned (for vector loads); release with gdn_free. */
void *gdn_malloc(size_t n, const char *what, gdn_error *e);
/* count * size bytes (checked for overflow), zeroed, 64-byte aligned. */
void *gdn_calloc(size_t count, size_t size, const char *what, gdn_error *e);
void gdn_free(void *p);

/* a * b, or -1 if it does not fit in size_t.  Also for shape products. */
int gdn_mul_size(size_t a, size_t b, size_t *out);

/* Testing hook: make the n-th allocation from now fail (n >= 1); n = 0 turns
 * injection off.  Counts allocations from all threads. */
void gdn_alloc_fail_after(long n);
/* Allocations made since the process started (for tests that loop over
 * every allocation site). */
long gdn_alloc_count(void);

#endif
