#include "parity_stream.h"

#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gdn_threads.h"
#include "parity_budget.h"
#include "parity_dist.h"
#include "parity_kappa_model.h"
#include "parity_metrics.h"
#include "parity_result.h"
#include "parity_tensor.h"

#define GIB 1073741824.0

/* The most elements of one tensor (outputs and gradients) of shape s: the
 * streamed run's read-back buffers hold that many binary64 each. */
static long double largest_tensor(const gdn_shape *s) {
  long double most = 0;
  for (int t = 0; t < PARITY_T_N; t++) {
    const long double n = (long double)parity_tensor_numel(&parity_tensors[t], s);
    if (n > most) most = n;
  }
  return most;
}

/* The oracle's working set on a group of shape s (flags: which tier, and
 * whether its VJP runs), bounded from oracle.h's and oracle_vjp.h's memory
 * notes: per thread, the VJP's checkpointed states, (ceil(T / K) + K + 3) G
 * Dk Dv numbers with K = ceil(sqrt(T)), at two precisions (MPFR, certified:
 * p and p + 64 bits) or as double-words (dd, 16 bytes, beside an MPFR sample
 * of 2 columns); the forward's state blocks, a few Dk x Dv sets; and the
 * reference's binary64 outputs (and gradients) of the group, which the run
 * holds beside the kernels' output sets.  An MPFR number of p bits counts
 * its struct (32 bytes), its limbs and 16 bytes of malloc's header and
 * rounding (measured at 128 bits: 104 bytes per element for both
 * precisions; counted: 136). */
static long double oracle_bytes(const gdn_shape *s, int flags) {
  if (!(flags & (PARITY_STREAM_MPFR | PARITY_STREAM_DD))) return 0;
  const long double state = (long double)s->Dk * (long double)s->Dv, g = (long double)(s->Hv / s->Hk);
  const int mpfr = (flags & PARITY_STREAM_MPFR) != 0, bits = (flags >> 8) ? (flags >> 8) : 128;
  const long double limbs = 8.0L * (long double)((bits + 63) / 64), check = 8.0L * (long double)((bits + 127) / 64);
  const long double one = 48.0L + limbs, number = mpfr ? 96.0L + limbs + check : 16.0L;
  long double item = 8.0L * state * number; /* the forward's state blocks */
  int64_t k = 1;
  while (k * k < s->T) k++;
  if (flags & PARITY_STREAM_GRADS) {
    const long double sets = (long double)((s->T + k - 1) / k + k + 3) * g;
    item += sets * state * number;
    if (!mpfr) item += sets * (long double)s->Dk * 2.0L * one; /* the sample */
  }
  const int nt = gdn_threads_for(s->B * (flags & PARITY_STREAM_GRADS ? s->Hk : s->Hv));
  long double ref = 0; /* the group's reference, binary64 */
  for (int t = 0; t < PARITY_T_N; t++)
    if (!parity_tensors[t].grad || (flags & PARITY_STREAM_GRADS))
      ref += 8.0L * (long double)parity_tensor_numel(&parity_tensors[t], s);
  return (long double)nt * item + ref;
}

int parity_stream_bytes(const gdn_shape *s, int with_h0, int n_outputs, const parity_sweep_opts *o,
                        uint64_t *bytes, gdn_error *e) {
  uint64_t in, out;
  int rc = gdn_shape_bytes(s, (with_h0 & PARITY_STREAM_H0) || (with_h0 & PARITY_STREAM_GRADS), &in, &out, e);
  if (rc) return rc;
  /* saturating: a shape this large is refused by the caller's comparison */
  long double t = (long double)in + (long double)n_outputs * out;
  long double work = (long double)parity_budget_scratch(s, o);
  if (with_h0 & (PARITY_STREAM_MPFR | PARITY_STREAM_DD)) {
    const long double ob = oracle_bytes(s, with_h0);
    if (ob > work) work = ob; /* the oracle runs before the kernels, never beside them */
    if (o->dtype != GDN_DTYPE_F64 && (!o->policy || parity_policy_uses_model(o->policy)))
      t += (long double)parity_model_bytes(s, (with_h0 & PARITY_STREAM_GRADS) != 0); /* the error model */
  }
  t += work;
  if (with_h0 & PARITY_STREAM_GRADS) /* 3 gradient sets of 2 x the inputs (with h0), the cotangents */
    t += 6.0L * (long double)in + 0.5L * (long double)out;
  *bytes = t >= (long double)UINT64_MAX ? UINT64_MAX : (uint64_t)t;
  return GDN_OK;
}

uint64_t parity_stream_resident(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long long size = 0, resident = 0;
  const long page = sysconf(_SC_PAGESIZE);
  const int got = f && fscanf(f, "%llu %llu", &size, &resident) == 2 && page > 0;
  if (f) fclose(f);
  if (got) return (uint64_t)resident * (uint64_t)page;
  struct rusage ru; /* no /proc: the peak so far, an upper bound */
  return getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0 ? (uint64_t)ru.ru_maxrss * 1024u : 0;
}

uint64_t parity_stream_named_bytes(uint64_t need, uint64_t resident) {
  const uint64_t mib = 1u << 20, room = mib + resident / 16;
  return (need + room + mib - 1) / mib * mib;
}

/* The cases of the chunk size with the most, and their most devices. */
static void most_cases(const gdn_shape *s, const parity_sweep_opts *o, size_t *cases, size_t *seams) {
  *cases = *seams = 0;
  for (size_t ci = 0; ci < o->n_chunks; ci++) {
    int64_t dev[PARITY_MAX_LIST];
    const size_t nd = parity_sweep_devices_for(o, s, o->chunks[ci], dev);
    if (nd * o->n_prefixes > *cases) *cases = nd * o->n_prefixes;
    for (size_t di = 0; di < nd; di++)
      if ((size_t)dev[di] - 1 > *seams) *seams = (size_t)dev[di] - 1;
  }
}

uint64_t parity_stream_run_bytes(const gdn_shape *whole, int64_t n_groups, const parity_sweep_opts *o) {
  size_t cases, seams;
  most_cases(whole, o, &cases, &seams);
  /* the seams' exact sums: the run's, and under mpirun one set per group (parity_sweep_stream.c) */
  const uint64_t sets = parity_dist_size() > 1 ? 1 + (uint64_t)n_groups : 1;
  uint64_t b = (sets * cases * seams + 1) * sizeof(parity_rel_acc);
  /* each worker thread beyond the first: its stack's touched pages and its malloc arena's slack */
  b += (uint64_t)(gdn_threads_get() > 1 ? gdn_threads_get() - 1 : 0) * PARITY_STREAM_THREAD;
  return b + PARITY_STREAM_SLACK;
}

uint64_t parity_stream_measure_bytes(const gdn_shape *whole, int flags, const parity_sweep_opts *o) {
  size_t cases, seams;
  most_cases(whole, o, &cases, &seams);
  const int ref = (flags & (PARITY_STREAM_MPFR | PARITY_STREAM_DD)) != 0;
  const int model = ref && o->dtype != GDN_DTYPE_F64 && (!o->policy || parity_policy_uses_model(o->policy));
  const uint64_t pairs = ref ? 1 + 2 * (uint64_t)cases : (uint64_t)cases; /* parity_sweep_stream.c's chunk_pairs */
  uint64_t most = 0; /* every pair of one tensor at once, the tensors one after another */
  for (int t = 0; t < PARITY_T_N; t++) {
    if (parity_tensors[t].grad && !(flags & PARITY_STREAM_GRADS)) continue;
    int64_t dims[4], bl[4];
    parity_tensors[t].dims(whole, dims);
    for (size_t ci = 0; ci < o->n_chunks; ci++) {
      parity_tensors[t].blocks(whole, o->chunks[ci], bl);
      uint64_t b = pairs * parity_mstream_bytes(dims, bl);
      if (model) b += (1 + (uint64_t)cases) * parity_model_acc_bytes(dims, bl); /* the pairs against the reference */
      if (b > most) most = b;
    }
  }
  /* the measurements' records: the scan's and each case's (parity_subject_result) */
  return most + (1 + (uint64_t)cases) * 2 * sizeof(parity_subject_result);
}

static gdn_shape group_shape(const gdn_shape *s, int64_t keys);

/* Everything a group of `keys` key heads holds at once, the run's own part and the resident base. */
static int total_bytes(const gdn_shape *s, int64_t keys, int flags, int n_outputs, const parity_sweep_opts *o,
                       uint64_t resident, uint64_t *b, gdn_error *e) {
  const gdn_shape g = group_shape(s, keys);
  int rc = parity_stream_bytes(&g, flags, n_outputs, o, b, e);
  if (rc) return rc;
  /* the measurements follow the group's production, which has let go of its data; the read-back
   * buffers (binary64, four of the group's largest tensor) are held throughout */
  const long double meas = (long double)parity_stream_measure_bytes(s, flags, o),
                    bufs = 4.0L * 8.0L * largest_tensor(&g);
  const long double t = (*b > meas ? (long double)*b : meas) + bufs +
                        (long double)parity_stream_run_bytes(s, (s->Hk + keys - 1) / keys, o) + (long double)resident;
  *b = t >= (long double)UINT64_MAX ? UINT64_MAX : (uint64_t)t;
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
                               uint64_t max_bytes, uint64_t resident, int64_t hi, gdn_error *e) {
  int64_t lo = 0; /* lo fits (0 trivially), hi + 1 does not */
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    uint64_t b;
    if (total_bytes(s, mid, with_h0, n_outputs, o, resident, &b, e)) return -1;
    if (b <= max_bytes) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* The refusal when not even one key head's group fits: what it holds, and
 * the smallest --max-bytes that would run it. */
static int refuse(const parity_stream_plan *p, const gdn_shape *s, int with_h0, int n_outputs,
                  const parity_sweep_opts *o,
                  uint64_t max_bytes, gdn_error *e) {
  char lab[160];
  gdn_shape_format(s, lab, sizeof lab);
  const gdn_shape one = group_shape(s, p->group > 0 ? p->group : 1);
  uint64_t data = 0;
  gdn_error q;
  gdn_error_init(&q);
  parity_stream_bytes(&one, with_h0, n_outputs, o, &data, &q);
  const uint64_t run = parity_stream_run_bytes(s, (s->Hk + one.Hk - 1) / one.Hk, o),
                 meas = parity_stream_measure_bytes(s, with_h0, o);
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "shape %s needs %.3g GiB, and streamed by head group still %.3g GiB for a group of %" PRId64
                       " key head%s (the larger of %.3g MiB for its inputs, %d output sets, the kernels' scratch%s, "
                       "and %.3g MiB for the measurements that follow; %.3g MiB of read-back buffers; %.3g MiB for the "
                       "run's seam sums and threads; %.3g MiB the process held when it planned), more than the "
                       "limit of %.3g GiB (--max-bytes %" PRIu64
                       "); the smallest limit that runs it: --max-bytes %" PRIu64,
                       lab, p->whole_bytes / GIB, p->peak / GIB, one.Hk, one.Hk == 1 ? "" : "s", data / 1048576.0,
                       n_outputs, with_h0 & (PARITY_STREAM_MPFR | PARITY_STREAM_DD) ? ", the oracle" : "",
                       meas / 1048576.0, 32.0 * (double)largest_tensor(&one) / 1048576.0, run / 1048576.0,
                       p->resident / 1048576.0, max_bytes / GIB, max_bytes,
                       parity_stream_named_bytes(p->peak, p->resident));
}

int parity_stream_plan_make(const gdn_shape *s, int with_h0, int n_outputs, const parity_sweep_opts *o,
                            uint64_t max_bytes, int64_t force_group, parity_stream_plan *p, gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  p->whole = *s;
  p->max_bytes = max_bytes;
  p->forced = force_group > 0;
  p->resident = with_h0 & PARITY_STREAM_RESIDENT ? parity_stream_resident() : 0;
  /* every rank of one case plans alike: rank 0's count (it measures, so it holds the most) */
  if ((with_h0 & PARITY_STREAM_RESIDENT) && parity_dist_collective() &&
      (rc = parity_dist_bcast(&p->resident, sizeof p->resident, 0, e)))
    return rc;
  uint64_t all; /* one group of every head, with the streamed run's own part */
  if ((rc = parity_stream_bytes(s, with_h0, n_outputs, o, &p->whole_bytes, e)) ||
      (rc = total_bytes(s, s->Hk, with_h0, n_outputs, o, p->resident, &all, e)))
    return rc;
  char lab[160];
  gdn_shape_format(s, lab, sizeof lab);
  if (force_group > s->Hk)
    return gdn_error_set(e, GDN_ERR_INPUT, "head group of %" PRId64 " key heads: shape %s has %" PRId64, force_group,
                         lab, s->Hk);
  int64_t g = force_group > 0 ? force_group : s->Hk;
  if (!p->forced && max_bytes && all > max_bytes) {
    g = largest_fitting(s, with_h0, n_outputs, o, max_bytes, p->resident, s->Hk - 1, e);
    if (g < 0) return e ? e->code : GDN_ERR_INPUT;
    g = parity_stream_even(s->Hk, g);
  }
  p->group = g;
  if ((rc = total_bytes(s, g > 0 ? g : 1, with_h0, n_outputs, o, p->resident, &p->peak, e))) return rc;
  if (g == 0 || (max_bytes && p->peak > max_bytes)) return refuse(p, s, with_h0, n_outputs, o, max_bytes, e);
  p->n_groups = (s->Hk + g - 1) / g;
  return GDN_OK;
}

int64_t parity_stream_even(int64_t Hk, int64_t g) {
  if (g <= 0) return g;
  const int64_t n = (Hk + g - 1) / g;
  return (Hk + n - 1) / n;
}

int64_t parity_stream_share(int64_t Hk, int n_ranks) { return n_ranks > 1 ? (Hk + n_ranks - 1) / n_ranks : Hk; }

int parity_stream_plan_groups(parity_stream_plan *p, int64_t force, int n_ranks, parity_stream_peak_fn peak,
                              void *ctx, int *fits, gdn_error *e) {
  const int64_t Hk = p->whole.Hk;
  const uint64_t max = p->max_bytes;
  int64_t g = p->forced ? force : Hk;
  int rc;
  *fits = 0;
  if (!p->forced && max && p->whole_bytes > max) {
    for (g = Hk - 1; g > 0; g--) {
      uint64_t b;
      if ((rc = peak(ctx, g, &b, e))) return rc;
      if (b <= max) break;
    }
    g = parity_stream_even(Hk, g);
  }
  p->group = g > 0 ? g : 1;
  if ((rc = peak(ctx, p->group, &p->peak, e))) return rc;
  if (g == 0 || (max && p->peak > max)) return GDN_OK;
  *fits = 1;
  p->n_groups = (Hk + p->group - 1) / p->group;
  if (n_ranks > 1 && !p->forced && p->group > parity_stream_share(Hk, n_ranks)) { /* dealt over the ranks */
    p->group = parity_stream_share(Hk, n_ranks);
    p->n_groups = (Hk + p->group - 1) / p->group;
    rc = peak(ctx, p->group, &p->peak, e);
  }
  return rc;
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
  char tail[64] = "", res[80] = "";
  if (last != p->group) snprintf(tail, sizeof tail, " (the last %" PRId64 ")", last);
  if (p->resident) snprintf(res, sizeof res, ", %.3g MiB of it the process's before the run", p->resident / 1048576.0);
  snprintf(buf, n,
           "streamed by head group: %" PRId64 " key head%s (%" PRId64 " value head%s) per group%s, %" PRId64
           " groups%s; expected peak %.3g GiB of %s%s (the whole run at once: %.3g GiB)",
           p->group, p->group == 1 ? "" : "s", p->group * r, p->group * r == 1 ? "" : "s",
           p->forced ? ", as asked" : "", p->n_groups, tail, p->peak / GIB, lim, res, p->whole_bytes / GIB);
}
