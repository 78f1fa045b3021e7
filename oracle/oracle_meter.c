/* orc_meter: a run's progress for oracle_progress (oracle_internal.h). */
#include "oracle_internal.h"

void orc_meter_init(orc_meter *m, const oracle_progress *p, int64_t total) {
  m->p = p && p->fn ? p : NULL;
  m->total = total > 0 ? total : 0;
  m->step = m->total / 1000 > 0 ? m->total / 1000 : 1;
  m->done = 0;
  m->reported = 0;
}

/* Called from the workers: an atomic add, and the callback only when this
 * add crossed a thousandth (so at most ~1000 calls a run, each serialised
 * with the others and never reporting less than before). */
void orc_meter_add(orc_meter *m, int64_t n) {
  if (!m->p || n <= 0) return;
  int64_t before;
#pragma omp atomic capture
  {
    before = m->done;
    m->done += n;
  }
  int64_t now = before + n;
  if (before / m->step == now / m->step) return;
#pragma omp critical(orc_meter)
  {
    if (now > m->reported && now < m->total) {
      m->reported = now;
      m->p->fn(m->p->arg, now, m->total);
    }
  }
}

/* After the parallel region: the final call, done == total. */
void orc_meter_done(orc_meter *m) {
  if (!m->p) return;
  m->reported = m->total;
  m->p->fn(m->p->arg, m->total, m->total);
}
