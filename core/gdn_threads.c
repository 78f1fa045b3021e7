#include "gdn_threads.h"

#include <omp.h>

void gdn_threads_set(int n) {
  if (n >= 1) omp_set_num_threads(n);
}

int gdn_threads_get(void) { return omp_get_max_threads(); }
