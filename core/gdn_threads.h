/* gdn_threads: the thread count every parallel region uses.
 *
 * Parallel work in gdn-parity is always a set of independent items whose
 * results do not depend on which thread ran them, so any count gives
 * bit-identical results.  Default: all cores (OpenMP's default).
 */
#ifndef GDN_THREADS_H
#define GDN_THREADS_H

void gdn_threads_set(int n); /* n >= 1 */
int gdn_threads_get(void);

#endif
