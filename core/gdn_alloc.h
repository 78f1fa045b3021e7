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

/* Byte accounting (for tests of what a call holds at its peak): the bytes
 * currently held through gdn_malloc / gdn_calloc, and the most held at once
 * since the last gdn_alloc_peak_reset (which sets the peak to what is held
 * now).  Counted in the allocator's usable size of each block (what the
 * block really occupies, at least the bytes asked for; the same block size
 * counts the same every time), from all threads.  -1 where the C library
 * cannot tell a block's size (non-glibc builds). */
long long gdn_alloc_bytes_live(void);
long long gdn_alloc_bytes_peak(void);
void gdn_alloc_peak_reset(void);

#endif
