/* parity_progress: gdn-parity's progress line -- core's gdn_progress
 * (gdn_progress.h: what it draws, where and when; the same line
 * gdn-fixture regen draws) under the harness's names, which the sweep,
 * coverage and the command line use.  Each name below is exactly its
 * gdn_progress_* function. */
#ifndef PARITY_PROGRESS_H
#define PARITY_PROGRESS_H

#include "gdn_progress.h"

typedef gdn_progress parity_progress;

static inline void parity_progress_init(parity_progress *p, FILE *f, int enabled) { gdn_progress_init(p, f, enabled); }
static inline void parity_progress_add(parity_progress *p, int64_t n) { gdn_progress_add(p, n); }
static inline void parity_progress_begin(parity_progress *p, const char *what) { gdn_progress_begin(p, what); }
static inline void parity_progress_end(parity_progress *p) { gdn_progress_end(p); }
static inline void parity_progress_part(parity_progress *p, int64_t done, int64_t total) {
  gdn_progress_part(p, done, total);
}
/* An oracle_progress callback (arg: the parity_progress). */
static inline void parity_progress_oracle(void *arg, int64_t done, int64_t total) {
  gdn_progress_oracle(arg, done, total);
}
static inline void parity_progress_clear(parity_progress *p) { gdn_progress_clear(p); }
static inline void parity_progress_format(char *buf, size_t n, int64_t done, int64_t total, double elapsed,
                                          double last, const char *what) {
  gdn_progress_format(buf, n, done, total, elapsed, last, what);
}
static inline void parity_progress_format_part(char *buf, size_t n, int64_t done, int64_t total, double elapsed,
                                               double step, double frac, const char *what) {
  gdn_progress_format_part(buf, n, done, total, elapsed, step, frac, what);
}

#endif
