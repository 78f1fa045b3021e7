#include "parity_budget.h"

#include "parity_kappa_model.h"
#include "parity_metrics.h"

#include <inttypes.h>

#include "kern.h"
#include "parity_result.h"
#include "parity_subject.h"

/* The largest scratch of any kernel configuration the sweep runs. */
static size_t largest_scratch(const gdn_shape *s, const parity_sweep_opts *o, int64_t *at_chunk) {
  size_t worst = 0;
  *at_chunk = o->n_chunks ? o->chunks[0] : 0;
  for (size_t ci = 0; ci < o->n_chunks; ci++) {
    int64_t dev[PARITY_MAX_LIST];
    size_t nd = parity_sweep_devices_for(o, s, o->chunks[ci], dev);
    for (size_t di = 0; di < nd; di++)
      for (size_t pi = 0; pi < o->n_prefixes; pi++) {
        kern_config cfg;
        kern_config_init(&cfg);
        cfg.dtype = o->dtype;
        cfg.matmul = o->matmul;
        cfg.ftz = parity_sweep_ftz(o);
        cfg.chunk = o->chunks[ci];
        cfg.devices = dev[di];
        cfg.prefix = o->prefixes[pi];
        size_t b = kern_scratch_bytes(s, &cfg);
        if (b > worst) worst = b, *at_chunk = cfg.chunk;
      }
  }
  return worst;
}

int parity_budget_check(const gdn_shape *s, int with_h0, int n_outputs, const parity_sweep_opts *o,
                        uint64_t max_bytes, gdn_error *e) {
  int rc = gdn_shape_check_limit(s, with_h0, n_outputs, max_bytes, e);
  if (rc || max_bytes == 0) return rc;
  uint64_t in, out;
  if ((rc = gdn_shape_bytes(s, with_h0, &in, &out, e))) return rc;
  int64_t chunk;
  size_t scratch = largest_scratch(s, o, &chunk);
  /* the metrics run between kernels, never beside one: the larger counts */
  const size_t metrics = parity_metrics_scratch_bytes(gdn_shape_numel_v(s));
  uint64_t data = in + (uint64_t)n_outputs * out; /* <= max_bytes: checked above */
  if (o->dtype != GDN_DTYPE_F64 && (!o->policy || parity_policy_uses_model(o->policy))) { /* the error model (parity_kappa_model.h): its heap, its binary64 scratch */
    const uint64_t ms = scratch == SIZE_MAX ? 0 : scratch, mb = parity_model_bytes(s, o->ct != NULL) + ms;
    if (mb > max_bytes - data)
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "shape: the error model needs %.3g GiB (its heap and %.3g GiB of binary64 kernel scratch "
                           "at chunk size %" PRId64 ") more than the limit of %.3g GiB (--max-bytes %" PRIu64
                           ") leaves; use a smaller --chunk",
                           mb / 1073741824.0, ms / 1073741824.0, chunk, max_bytes / 1073741824.0, max_bytes);
    data += mb;
  }
  if ((scratch > metrics ? scratch : metrics) <= max_bytes - data) return GDN_OK;
  char lab[160];
  gdn_shape_format(s, lab, sizeof lab);
  if (metrics >= scratch)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "shape %s needs %.3g GiB of working memory for the metrics (radix histograms, exact sums) "
                         "besides %.3g GiB of inputs and outputs, more than the limit of %.3g GiB (--max-bytes %" PRIu64
                         ")",
                         lab, metrics / 1073741824.0, data / 1073741824.0, max_bytes / 1073741824.0, max_bytes);
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "shape %s with chunk size %" PRId64 " needs %.3g GiB of kernel scratch on %d thread%s "
                       "besides %.3g GiB of inputs and outputs, more than the limit of %.3g GiB "
                       "(--max-bytes %" PRIu64 "); use a smaller --chunk",
                       lab, chunk, scratch == SIZE_MAX ? 1.8e10 : scratch / 1073741824.0, kern_threads(s),
                       kern_threads(s) == 1 ? "" : "s", data / 1073741824.0, max_bytes / 1073741824.0, max_bytes);
}

uint64_t parity_budget_per_subject(const parity_policy *p) {
  uint64_t checks = 0;
  for (size_t i = 0; i < p->n_rules; i++)
    if (p->rules[i].subjects & PARITY_SUBJ_EXTERNAL) checks += (uint64_t)__builtin_popcount(p->rules[i].tensors);
  return 2 * sizeof(parity_subject_result) + sizeof(parity_subject_run) + sizeof(parity_subject) +
         3 * checks * sizeof(parity_check);
}

size_t parity_budget_scratch(const gdn_shape *s, const parity_sweep_opts *o) {
  int64_t chunk;
  return largest_scratch(s, o, &chunk);
}
