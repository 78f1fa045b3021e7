/* A counting GMP allocator for the oracle's memory tests (header-only).
 *
 * gcu_install() routes every GMP/MPFR allocation (mp_set_memory_functions)
 * through counters of the live bytes and their peak; call it before the
 * first MPFR work.  gcu_mark() starts a measurement at the current level and
 * returns that level; gcu_peak() - mark is then the peak above it.  The
 * counters are atomic, but a peak is only repeatable with one thread (with
 * several, it depends on timing): the tests that compare peaks set one.
 */
#ifndef GMP_COUNT_UTIL_H
#define GMP_COUNT_UTIL_H

#include <gmp.h>
#include <stdatomic.h>
#include <stdlib.h>

static atomic_long gcu_live_, gcu_peak_;

static inline void gcu_note(long delta) {
  long now = atomic_fetch_add(&gcu_live_, delta) + delta, p = atomic_load(&gcu_peak_);
  while (now > p && !atomic_compare_exchange_weak(&gcu_peak_, &p, now)) {
  }
}
static inline void *gcu_alloc(size_t n) {
  void *p = malloc(n);
  if (p) gcu_note((long)n);
  return p;
}
static inline void *gcu_realloc(void *p, size_t old, size_t n) {
  void *q = realloc(p, n);
  if (q) gcu_note((long)n - (long)old);
  return q;
}
static inline void gcu_free(void *p, size_t n) {
  free(p);
  gcu_note(-(long)n);
}

static inline void gcu_install(void) { mp_set_memory_functions(gcu_alloc, gcu_realloc, gcu_free); }
static inline long gcu_live(void) { return atomic_load(&gcu_live_); }
static inline long gcu_peak(void) { return atomic_load(&gcu_peak_); }
static inline long gcu_mark(void) {
  long base = atomic_load(&gcu_live_);
  atomic_store(&gcu_peak_, base);
  return base;
}

#endif
