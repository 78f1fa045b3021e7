#include "gdn_threads.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void gdn_threads_set(int n) {
  if (n >= 1) omp_set_num_threads(n);
}

int gdn_threads_get(void) { return omp_get_max_threads(); }

int gdn_threads_for(int64_t work) {
  int64_t nt = omp_get_max_threads();
  if (nt > work) nt = work;
  return nt < 1 ? 1 : (int)nt;
}

static const char *guard_prog;
static volatile int guard_done;

static void guard_at_exit(void) {
  if (guard_done || !guard_prog) return;
  /* Only async-signal-safe calls: we may be inside a failing library. */
  static const char tail[] = ": error: the run was ended by a library (libgomp: thread creation failed?); "
                             "use fewer --threads or raise the process/memory limits\n";
  if (write(2, guard_prog, strlen(guard_prog)) < 0 || write(2, tail, sizeof tail - 1) < 0) {
  }
  _exit(3);
}

void gdn_threads_guard_install(const char *prog) {
  guard_prog = prog;
  guard_done = 0;
  atexit(guard_at_exit);
}

void gdn_threads_guard_done(void) { guard_done = 1; }
