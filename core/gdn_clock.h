/* gdn_clock: seconds on the monotonic clock, for the timings a run reports
 * (never part of a result: --reproducible leaves them out). */
#ifndef GDN_CLOCK_H
#define GDN_CLOCK_H

#include <time.h>

static inline double gdn_clock_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
