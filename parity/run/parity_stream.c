#include "parity_stream.h"

#include <inttypes.h>
#include <stdio.h>

#include "parity_budget.h"

#define GIB 1073741824.0

int parity_stream_bytes(const gdn_shape *s, int with_h0, int n_outputs, const parity_sweep_opts *o,
                        uint64_t *bytes, gdn_error *e) {
  uint64_t in, out;
  int rc = gdn_shape_bytes(s, (with_h0 & PARITY_STREAM_H0) || (with_h0 & PARITY_STREAM_GRADS), &in, &out, e);
  if (rc) return rc;
  /* saturating: a shape this large is refused by the caller's comparison */
  long double t = (long double)in + (long double)n_outputs * out + (long double)parity_budget_scratch(s, o);
  if (with_h0 & PARITY_STREAM_GRADS) /* 3 gradient sets of 2 x the inputs (with h0), the cotangents */
    t += 6.0L * (long double)in + 0.5L * (long double)out;
  *bytes = t >= (long double)UINT64_MAX ? UINT64_MAX : (uint64_t)t;
  return GDN_OK;
}

static gdn_shape group_shape(const gdn_shape *s, int64_t keys) {
  gdn_shape g = *s;
  g.Hv = keys * (s->Hv / s->Hk);
  g.Hk = keys;
  return g;
}

/* The largest group of at most `hi` key heads whose peak fits (0: none);
 * the peak grows with the group, so the search halves. */
static int64_t largest_fitting(const gdn_shape *s, int with_h0, int n_outputs, const parity_sweep_opts *o,
                               uint64_t max_bytes, int64_t hi, gdn_error *e) {
  int64_t lo = 0; /* lo fits (0 trivially), hi + 1 does not */
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    const gdn_shape g = group_shape(s, mid);
    uint64_t b;
    if (parity_stream_bytes(&g, with_h0, n_outputs, o, &b, e)) return -1;
    if (b <= max_bytes) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

int parity_stream_plan_make(const gdn_shape *s, int with_h0, int n_outputs, const parity_sweep_opts *o,
                            uint64_t max_bytes, int64_t force_group, parity_stream_plan *p, gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  p->whole = *s;
  p->max_bytes = max_bytes;
  p->forced = force_group > 0;
  if ((rc = parity_stream_bytes(s, with_h0, n_outputs, o, &p->whole_bytes, e))) return rc;
  char lab[160];
  gdn_shape_format(s, lab, sizeof lab);
  if (force_group > s->Hk)
    return gdn_error_set(e, GDN_ERR_INPUT, "head group of %" PRId64 " key heads: shape %s has %" PRId64, force_group,
                         lab, s->Hk);
  int64_t g = force_group > 0 ? force_group : s->Hk;
  if (!p->forced && max_bytes && p->whole_bytes > max_bytes) {
    g = largest_fitting(s, with_h0, n_outputs, o, max_bytes, s->Hk - 1, e);
    if (g < 0) return e ? e->code : GDN_ERR_INPUT;
    /* as many groups as the largest fitting size needs, evened out (16
     * key heads in groups of at most 5: 4 groups of 4, not 5 5 5 1): a
     * smaller peak, and ranks that share the groups share the work */
    if (g > 0) g = (s->Hk + (s->Hk + g - 1) / g - 1) / ((s->Hk + g - 1) / g);
  }
  const gdn_shape one = group_shape(s, g > 0 ? g : 1);
  if ((rc = parity_stream_bytes(&one, with_h0, n_outputs, o, &p->peak, e))) return rc;
  if (g == 0 || (max_bytes && p->peak > max_bytes))
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "shape %s needs %.3g GiB, and streamed by head group still %.3g GiB for a group of %" PRId64
                         " key head%s (inputs, %d output sets and the kernels' scratch), more than the limit of "
                         "%.3g GiB (--max-bytes %" PRIu64 ")",
                         lab, p->whole_bytes / GIB, p->peak / GIB, one.Hk, one.Hk == 1 ? "" : "s", n_outputs,
                         max_bytes / GIB, max_bytes);
  p->group = g;
  p->n_groups = (s->Hk + g - 1) / g;
  return GDN_OK;
}

void parity_stream_group(const parity_stream_plan *p, int64_t i, int64_t *k0, int64_t *k1, gdn_shape *gs) {
  *k0 = i * p->group;
  *k1 = *k0 + p->group < p->whole.Hk ? *k0 + p->group : p->whole.Hk;
  *gs = group_shape(&p->whole, *k1 - *k0);
}

int parity_stream_owner(int64_t i, int n_ranks) { return n_ranks > 1 ? (int)(i % n_ranks) : 0; }

int64_t parity_stream_rank_groups(const parity_stream_plan *p, int rank, int n_ranks) {
  if (n_ranks <= 1) return p->n_groups;
  return p->n_groups / n_ranks + (rank < p->n_groups % n_ranks);
}

void parity_stream_describe(const parity_stream_plan *p, char *buf, size_t n) {
  const int64_t r = p->whole.Hv / p->whole.Hk, last = p->whole.Hk - (p->n_groups - 1) * p->group;
  char lim[64] = "no limit";
  if (p->max_bytes) snprintf(lim, sizeof lim, "the %.3g GiB limit", p->max_bytes / GIB);
  if (p->n_groups == 1) {
    snprintf(buf, n, "not streamed: the whole run holds %.3g GiB at its peak, within %s", p->whole_bytes / GIB, lim);
    return;
  }
  char tail[64] = "";
  if (last != p->group) snprintf(tail, sizeof tail, " (the last %" PRId64 ")", last);
  snprintf(buf, n,
           "streamed by head group: %" PRId64 " key head%s (%" PRId64 " value head%s) per group%s, %" PRId64
           " groups%s; expected peak %.3g GiB of %s (the whole run at once: %.3g GiB)",
           p->group, p->group == 1 ? "" : "s", p->group * r, p->group * r == 1 ? "" : "s",
           p->forced ? ", as asked" : "", p->n_groups, tail, p->peak / GIB, lim, p->whole_bytes / GIB);
}
