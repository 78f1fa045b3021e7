/* gdn_threads: the thread count every parallel region uses.
 *
 * Parallel work in gdn-parity is always a set of independent items whose
 * results do not depend on which thread ran them, so any count gives
 * bit-identical results.  Default: all cores (OpenMP's default).
 */
#ifndef GDN_THREADS_H
#define GDN_THREADS_H

#include <stdint.h>

void gdn_threads_set(int n); /* n >= 1 */
int gdn_threads_get(void);
/* The threads a parallel region over `work` independent items uses: the
 * set count, but never more than the items (idle threads cost their
 * scratch and their start-up: --threads 4096 on 8 heads starts 8), and at
 * least 1. */
int gdn_threads_for(int64_t work);

/* libgomp ends the process with exit(1) -- a tolerance failure's status --
 * when it cannot create a thread ("Thread creation failed").  After
 * gdn_threads_guard_install, any exit() that is not the program's own
 * (gdn_threads_guard_done marks that one) becomes exit status 3 with a
 * message on stderr naming `prog`: nothing below main calls exit
 * (docs/CONVENTIONS.md), so such an exit is a library's fatal error. */
void gdn_threads_guard_install(const char *prog);
void gdn_threads_guard_done(void);

#endif
