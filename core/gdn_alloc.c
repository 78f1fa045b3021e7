#include "gdn_alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_long fail_countdown; /* 0: off; k: the k-th call fails */
static atomic_long alloc_calls;

void gdn_alloc_fail_after(long n) { atomic_store(&fail_countdown, n > 0 ? n : 0); }
long gdn_alloc_count(void) { return atomic_load(&alloc_calls); }

static int injected_failure(void) {
  atomic_fetch_add(&alloc_calls, 1);
  long c = atomic_load(&fail_countdown);
  while (c > 0) {
    if (atomic_compare_exchange_weak(&fail_countdown, &c, c - 1))
      return c == 1;
  }
  return 0;
}

int gdn_mul_size(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a) return -1;
  *out = a * b;
  return 0;
}

void *gdn_malloc(size_t n, const char *what, gdn_error *e) {
  if (n == 0) n = 1;
  size_t rounded = (n + 63) & ~(size_t)63;
  if (rounded < n || injected_failure()) {
    gdn_error_set(e, GDN_ERR_NOMEM, "out of memory allocating %zu bytes for %s", n,
                  what ? what : "a buffer");
    return NULL;
  }
  void *p = aligned_alloc(64, rounded);
  if (!p)
    gdn_error_set(e, GDN_ERR_NOMEM, "out of memory allocating %zu bytes for %s", n,
                  what ? what : "a buffer");
  return p;
}

void *gdn_calloc(size_t count, size_t size, const char *what, gdn_error *e) {
  size_t n;
  if (gdn_mul_size(count, size, &n)) {
    gdn_error_set(e, GDN_ERR_NOMEM, "allocation size overflow (%zu x %zu bytes) for %s",
                  count, size, what ? what : "a buffer");
    return NULL;
  }
  void *p = gdn_malloc(n, what, e);
  if (p) memset(p, 0, n);
  return p;
}

void gdn_free(void *p) { free(p); }
