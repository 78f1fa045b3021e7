/* parity_stream_merge (parity_stream_merge.h). */
#include "parity_stream_merge.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "gdn_alloc.h"
#include "gdn_clock.h"
#include "parity_dist.h"
#include "parity_dist_merge.h"
#include "parity_stream.h"

int parity_stream_holds(int64_t g) { return parity_stream_owner(g, parity_dist_size()) == parity_dist_rank(); }

static int holds_cb(void *ctx, int64_t g) {
  (void)ctx;
  return parity_stream_holds(g);
}
static int sum_cb(void *ctx, int64_t *v, size_t n, gdn_error *e) {
  (void)ctx;
  return parity_dist_sum_i64(GDN_OK, v, n, e);
}
static int min_cb(void *ctx, double *v, gdn_error *e) {
  (void)ctx;
  return parity_dist_min_f64(GDN_OK, v, 1, e);
}

void parity_stream_group_net(parity_group_src *src) {
  const int many = parity_dist_size() > 1;
  src->holds = many ? holds_cb : NULL;
  src->sum_i64 = many ? sum_cb : NULL;
  src->min_f64 = many ? min_cb : NULL;
}

typedef struct {
  parity_mstream *M;
  parity_model_acc *MA;
  int pass_b;
  size_t n_m; /* the metrics' bytes; the model's follow */
} pair_ctx;

static int pair_part(void *ctx, int rank, const void *part, size_t n, gdn_error *e) {
  const pair_ctx *p = ctx;
  (void)rank;
  uint64_t n_m;
  if (n < sizeof n_m) return gdn_error_set(e, GDN_ERR_INTERNAL, "merging a pair: a part of %zu bytes", n);
  memcpy(&n_m, part, sizeof n_m);
  const char *at = (const char *)part + sizeof n_m;
  n -= sizeof n_m;
  if (n_m > n) return gdn_error_set(e, GDN_ERR_INTERNAL, "merging a pair: a part of %zu bytes", n);
  int rc = parity_mstream_merge(p->M, p->pass_b, at, (size_t)n_m, e);
  if (!rc && p->MA) rc = parity_model_acc_merge(p->MA, p->pass_b, at + n_m, n - (size_t)n_m, e);
  return rc;
}

int parity_stream_merge_pair(int status, parity_mstream *M, parity_model_acc *MA, int pass_b, gdn_error *e) {
  if (parity_dist_size() == 1) return status;
  pair_ctx p = {M, MA, pass_b, 0};
  const uint64_t n_m = status ? 0 : parity_mstream_pack(M, pass_b, NULL);
  const size_t n_a = status || !MA ? 0 : parity_model_acc_pack(MA, pass_b, NULL), n = sizeof n_m + n_m + n_a;
  char *buf = gdn_malloc(n, "a pair's part", e);
  if (!buf && !status) status = GDN_ERR_NOMEM;
  if (buf) {
    memcpy(buf, &n_m, sizeof n_m);
    if (!status) parity_mstream_pack(M, pass_b, buf + sizeof n_m);
    if (!status && MA) parity_model_acc_pack(MA, pass_b, buf + sizeof n_m + n_m);
  }
  int rc = parity_dist_allmerge(status, buf, buf ? n : 0, pair_part, &p, e);
  gdn_free(buf);
  return rc;
}

int parity_stream_passes(int status, int64_t n_groups, parity_stream_visit visit, void *ctx,
                         parity_mstream *const *M, parity_model_acc *const *MA, size_t n, double *secs, gdn_error *e) {
  int rc = status;
  for (int pass = 0; pass < 2; pass++) {
    const double t0 = gdn_clock_seconds();
    for (int64_t g = 0; g < n_groups && !rc; g++)
      if (parity_stream_holds(g)) rc = visit(ctx, g, pass, e); /* each rank its own groups */
    if (secs) *secs += gdn_clock_seconds() - t0;
    for (size_t i = 0; i < n; i++) /* the floors (pass A), the maxima and the bucket (pass B) over the ranks */
      if ((rc = parity_stream_merge_pair(rc, M[i], MA ? MA[i] : NULL, pass, e))) break;
    for (size_t i = 0; i < n && !rc && !pass; i++) {
      parity_mstream_between(M[i]);
      if (MA && MA[i]) parity_model_acc_between(MA[i]);
    }
  }
  return rc;
}

/* The maxima of a case, in one array: seams (3 each), the profiles, the
 * gradients' profiles, the figures; `put` 1 gathers them, 0 puts them back. */
static size_t case_maxima(parity_case_result *r, double *fig, size_t n_fig, double *v, int put) {
  size_t k = 0;
#define ONE(x) (v ? (put ? (v[k] = (x)) : ((x) = v[k])) : 0, k++)
  for (size_t s = 0; s < r->n_seams; s++) {
    ONE(r->seams[s].cand_vs_base);
    ONE(r->seams[s].baseline);
    ONE(r->seams[s].candidate);
  }
  for (int64_t i = 0; r->profile.candidate && i < r->profile.n; i++) ONE(r->profile.candidate[i]);
  for (int64_t i = 0; r->profile.cand_vs_base && i < r->profile.n; i++) ONE(r->profile.cand_vs_base[i]);
  for (int t = 0; t < PARITY_T_N; t++)
    for (int64_t i = 0; (r->grad_profile.mask >> t & 1) && i < r->grad_profile.n; i++) {
      ONE(r->grad_profile.ref_max_abs[t][i]);
      ONE(r->grad_profile.baseline[t][i]);
      ONE(r->grad_profile.candidate[t][i]);
    }
  for (size_t i = 0; i < n_fig; i++) ONE(fig[i]);
#undef ONE
  return k;
}

int parity_stream_merge_case(int status, parity_case_result *r, double *fig, size_t n_fig, gdn_error *e) {
  if (parity_dist_size() == 1) return status;
  const size_t n = case_maxima(r, fig, n_fig, NULL, 1);
  double *v = gdn_malloc((n ? n : 1) * sizeof *v, "a case's maxima", e);
  if (!v && !status) status = GDN_ERR_NOMEM;
  if (v) case_maxima(r, fig, n_fig, v, 1);
  int rc = parity_dist_max_f64(status, v, v ? n : 0, e);
  if (!rc) case_maxima(r, fig, n_fig, v, 0);
  gdn_free(v);
  const size_t nm = r->block_map.values ? (size_t)(r->block_map.heads * r->block_map.bins) : 0;
  return parity_stream_merge_disjoint(rc, r->block_map.values, nm, e);
}

int parity_stream_merge_disjoint(int status, double *v, size_t n, gdn_error *e) {
  if (parity_dist_size() == 1) return status;
  /* each value from one rank, zero bits elsewhere: the sum of the bit patterns is the owner's bits */
  int64_t *bits = gdn_malloc((n ? n : 1) * sizeof *bits, "disjoint values' bits", e);
  if (!bits && !status) status = GDN_ERR_NOMEM;
  if (bits && n) memcpy(bits, v, n * sizeof *bits);
  int rc = parity_dist_sum_i64(status, bits, bits ? n : 0, e);
  if (!rc && n) memcpy(v, bits, n * sizeof *bits);
  gdn_free(bits);
  return rc;
}

/* This process's CPU seconds so far (user + system, every thread). */
static double cpu_seconds(void) {
  struct rusage u;
  if (getrusage(RUSAGE_SELF, &u)) return 0;
  return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_sec +
         1e-6 * (double)u.ru_stime.tv_usec;
}

int parity_stream_measure_report(double secs, int64_t groups, int64_t n_groups, char *line, size_t n, double *share,
                                 gdn_error *e) {
  const int size = parity_dist_size();
  double *all = gdn_calloc((size_t)size * 3, sizeof *all, "measuring seconds", e);
  if (!all) return GDN_ERR_NOMEM;
  double *me = all + 3 * parity_dist_rank();
  me[0] = secs, me[1] = (double)groups, me[2] = cpu_seconds();
  int rc = parity_dist_max_f64(GDN_OK, all, (size_t)size * 3, e); /* each slot is one rank's, the rest +0 */
  double sum = 0;
  for (int r = 0; r < size; r++) sum += all[3 * r];
  if (share) *share = sum > 0 ? all[0] / sum : 1;
  size_t at = line && n ? (size_t)snprintf(line, n, "measurement dealt over %d rank%s:", size, size > 1 ? "s" : "") : 0;
  for (int r = 0; !rc && line && r < size && at < n; r++)
    at += (size_t)snprintf(line + at, n - at, "%s rank %d %.2f s measuring (%.0f of %lld groups), %.2f CPU s in all",
                           r ? "," : "", r, all[3 * r], all[3 * r + 1], (long long)n_groups, all[3 * r + 2]);
  if (!rc && line && at < n) snprintf(line + at, n - at, "; rank 0's share %.3f", sum > 0 ? all[0] / sum : 1);
  gdn_free(all);
  return rc;
}

typedef struct {
  parity_kappa_acc *a;
  size_t n;
} kappa_ctx;

static int kappa_part(void *ctx, int rank, const void *part, size_t n, gdn_error *e) {
  const kappa_ctx *k = ctx;
  (void)rank;
  if (n != k->n * sizeof *k->a) return gdn_error_set(e, GDN_ERR_INTERNAL, "merging kappa: a part of %zu bytes", n);
  parity_kappa_acc *b = gdn_malloc(sizeof *b, "kappa sums", e);
  if (!b) return GDN_ERR_NOMEM;
  for (size_t i = 0; i < k->n; i++) {
    memcpy(b, (const char *)part + i * sizeof *b, sizeof *b);
    parity_kappa_acc_merge(&k->a[i], b);
  }
  gdn_free(b);
  return GDN_OK;
}

int parity_stream_merge_kappa(int status, parity_kappa_acc *a, size_t n, gdn_error *e) {
  if (parity_dist_size() == 1) return status;
  parity_kappa_acc *mine = gdn_malloc((n ? n : 1) * sizeof *mine, "kappa sums", e);
  if (!mine && !status) status = GDN_ERR_NOMEM;
  if (mine) memcpy(mine, a, n * sizeof *a);
  kappa_ctx k = {a, n};
  int rc = parity_dist_allmerge(status, mine, mine ? n * sizeof *a : 0, kappa_part, &k, e);
  gdn_free(mine);
  return rc;
}
