#include "gdn_alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#define GDN_ALLOC_SIZES 1
#else
#define GDN_ALLOC_SIZES 0
#endif

static atomic_long fail_countdown; /* 0: off; k: the k-th call fails */
static atomic_long alloc_calls;

/* Byte accounting: live and peak bytes (usable sizes, see gdn_alloc.h). */
static atomic_llong bytes_live, bytes_peak;

static void account(void *p, int sign) {
#if GDN_ALLOC_SIZES
  if (!p) return;
  long long n = (long long)malloc_usable_size(p);
  long long live = atomic_fetch_add(&bytes_live, sign * n) + sign * n;
  long long peak = atomic_load(&bytes_peak);
  while (live > peak && !atomic_compare_exchange_weak(&bytes_peak, &peak, live)) {
  }
#else
  (void)p;
  (void)sign;
#endif
}

long long gdn_alloc_bytes_live(void) { return GDN_ALLOC_SIZES ? atomic_load(&bytes_live) : -1; }
long long gdn_alloc_bytes_peak(void) { return GDN_ALLOC_SIZES ? atomic_load(&bytes_peak) : -1; }
void gdn_alloc_peak_reset(void) { atomic_store(&bytes_peak, atomic_load(&bytes_live)); }

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
  account(p, +1);
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

void gdn_free(void *p) {
  account(p, -1);
  free(p);
}
