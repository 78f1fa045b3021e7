#include "parity_coverage_stream.h"

#include <string.h>

#include "parity_budget.h"
#include "parity_spill.h"
#include "parity_sweep_stream.h"
#include "parity_synth_group.h"

/* The output sets a coverage case holds at once: reference, scan,
 * candidate and one mutant's (parity_sweep.h). */
enum { COVERAGE_SETS = 4 };

int parity_coverage_entry_plan(const parity_synth_spec *sp, const parity_sweep_opts *so, uint64_t max_bytes,
                               int64_t group_heads, parity_stream_plan *plan, gdn_error *e) {
  const int h0 = (sp->synth.flags & GDN_SYNTH_H0) != 0;
  memset(plan, 0, sizeof *plan);
  plan->whole = sp->shape;
  plan->group = sp->shape.Hk;
  plan->n_groups = 1;
  const int flags = (h0 ? PARITY_STREAM_H0 : 0) | (sp->grad ? PARITY_STREAM_GRADS : 0);
  if (group_heads > 0) /* asked for: streamed by that many key heads (its peak still within max_bytes) */
    return parity_stream_plan_make(&sp->shape, flags, COVERAGE_SETS, so, max_bytes, group_heads, plan, e);
  uint64_t with_grads = 0; /* a "grad" entry: whole when its gradient sets fit too */
  if (!max_bytes || (!parity_budget_check(&sp->shape, h0, COVERAGE_SETS, so, max_bytes, NULL) &&
                     (!sp->grad || (!parity_stream_bytes(&sp->shape, flags, COVERAGE_SETS, so, &with_grads, NULL) &&
                                    with_grads <= max_bytes))))
    return GDN_OK;
  gdn_error quiet;
  gdn_error_init(&quiet);
  /* one group of every head is the whole run, which the budget above refused */
  if (!parity_stream_plan_make(&sp->shape, flags, COVERAGE_SETS, so, max_bytes, 0, plan, &quiet) && plan->n_groups > 1)
    return GDN_OK;
  int rc = parity_budget_check(&sp->shape, h0, COVERAGE_SETS, so, max_bytes, e); /* the whole run's words */
  if (e && quiet.msg[0]) {
    const size_t n = strlen(e->msg);
    snprintf(e->msg + n, sizeof e->msg - n, "; streamed by head group, not even one key head fits (%s)", quiet.msg);
  }
  plan->n_groups = 1;
  return rc;
}

int parity_coverage_sweep_streamed(parity_doc *d, const parity_synth_spec *sp, const parity_stream_plan *plan,
                                   parity_oracle_tier tier, int bits, const parity_sweep_opts *so, gdn_error *e) {
  int rc = parity_spill_check(e); /* a bad TMPDIR is named before any work */
  if (rc) return rc;
  const parity_stream_run sr = {plan, {parity_synth_group_load, (void *)sp}, "synthetic", "synthetic", NULL, NULL,
                                NULL, tier, bits, sp->grad, NULL};
  parity_progress_add(so->progress, parity_sweep_stream_steps(plan, so));
  return parity_sweep_run_streamed(d, &sr, so, e);
}
