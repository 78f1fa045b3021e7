/* parity_recur_step: a recurrence check's oracle step (parity_recur_step.h). */
#include "parity_recur_step.h"

#include <stdio.h>
#include <string.h>

const oracle_progress *parity_recur_step_begin(parity_progress *p, const char *path, const char *what,
                                               const char *tail, oracle_progress *op) {
  if (!p) return NULL;
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  char step[256];
  snprintf(step, sizeof step, "%s of %s%s", what, base, tail);
  parity_progress_add(p, 1);
  parity_progress_begin(p, step);
  *op = (oracle_progress){parity_progress_oracle, p};
  return op;
}

void parity_recur_step_end(parity_progress *p) {
  if (!p) return;
  parity_progress_end(p);
  parity_progress_clear(p);
}
