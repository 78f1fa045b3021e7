/* A pair's metrics measured over the ranks (parity/run/parity_stream_merge.h):
 * run under `mpirun -np N`, head group g (one head each) is added on rank
 * g mod N only; after pass A every rank merges every rank's part
 * (parity_stream_merge_pair), takes the floors, adds pass B, merges again
 * and finishes.  Every rank's metrics must equal the whole tensors'
 * (parity_metrics_compute_v, parity_metrics_blocks_v, and the error model's
 * statistics, parity_metrics_model_v) bit for bit (memcmp), for a pair with
 * every hazard (binades, zeros, a head scaled 1e-3 so a rank's own floor is
 * not the whole's, a tie of max |x - r| across heads on different ranks, a
 * NaN and an infinity), and for the median's three ways: a bucket of one
 * value, a bucket held whole (its values gathered from the ranks), and over
 * 65536 distinct values (the radix rounds count each rank's groups and sum
 * the counts; for even n the least value above the lower middle is the
 * ranks' minimum).
 * Negative control (N >= 2): pass A left unmerged (each rank its own
 * floors) gives another result or an error, so the merge is what makes
 * the identity.  Check runs without fork (CK_NOFORK). */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "gdn_threads.h"
#include "parity_dist.h"
#include "parity_metrics.h"
#include "parity_stream_merge.h"

static int g_rank, g_size;

static size_t numel(const int64_t d[4]) { return (size_t)(d[0] * d[1] * d[2] * d[3]); }

/* Head h (axis 2) of w into g, contiguous. */
static void head_copy(const double *w, double *g, const int64_t d[4], int64_t h) {
  const size_t outer = (size_t)(d[0] * d[1]), inner = (size_t)d[3];
  for (size_t j = 0; j < outer; j++) memcpy(g + j * inner, w + (j * (size_t)d[2] + (size_t)h) * inner, inner * sizeof *g);
}

/* The groups' source (the median's extra rounds read it): head g. */
typedef struct {
  const double *x, *r;
  const int64_t *d;
  double *gx, *gr;
} heads;

static int head_get(void *ctx, int64_t g, parity_vals *x, parity_vals *r, int64_t *h0, int64_t *h1, gdn_error *e) {
  heads *c = ctx;
  (void)e;
  head_copy(c->x, c->gx, c->d, g), head_copy(c->r, c->gr, c->d, g);
  *x = parity_vals_f64(c->gx), *r = parity_vals_f64(c->gr), *h0 = g, *h1 = g + 1;
  return GDN_OK;
}

/* The streamed measurement on this rank: merge_a 0 leaves pass A unmerged
 * (the negative control).  Returns the error code, m the metrics. */
static int dealt(const double *x, const double *r, const double *s, const int64_t d[4], const int64_t bl[4],
                 int merge_a, int local, parity_metrics *m) {
  const size_t per = numel(d) / (size_t)d[2];
  double *gx = malloc(per * sizeof *gx), *gr = malloc(per * sizeof *gr), *gs = malloc(per * sizeof *gs);
  gdn_error e;
  gdn_error_init(&e);
  parity_mstream *M = NULL;
  parity_model_acc *A = NULL;
  heads hc = {x, r, d, gx, gr};
  parity_group_src src = {head_get, &hc, d[2], 2, NULL, NULL, NULL};
  if (!local) parity_stream_group_net(&src); /* local: every group here, nothing merged */
  int rc = parity_mstream_new(&M, &src, d, bl, GDN_DTYPE_F32, &e);
  if (!rc && s) rc = parity_model_acc_new(&A, d, bl, 2, GDN_DTYPE_F32, &e);
  for (int pass = 0; pass < 2 && !rc; pass++) {
    for (int64_t h = 0; h < d[2] && !rc; h++) {
      if (!local && !parity_stream_holds(h)) continue;
      head_copy(x, gx, d, h), head_copy(r, gr, d, h);
      if (s) head_copy(s, gs, d, h);
      const parity_vals xv = parity_vals_f64(gx), rv = parity_vals_f64(gr);
      rc = pass ? parity_mstream_add_b(M, xv, rv, h, h + 1, &e) : parity_mstream_add_a(M, xv, rv, h, h + 1, &e);
      if (A && pass) parity_model_acc_add_b(A, xv, rv, gs, h, h + 1);
      else if (A) parity_model_acc_add_a(A, xv, rv, gs, h, h + 1);
    }
    if (!local && (pass || merge_a)) rc = parity_stream_merge_pair(rc, M, A, pass, &e);
    if (!rc && !pass) {
      parity_mstream_between(M);
      if (A) parity_model_acc_between(A);
    }
  }
  if (!rc) rc = parity_mstream_finish(M, m, &e);
  if (!rc && A) parity_model_acc_finish(A, m);
  parity_model_acc_free(A);
  parity_mstream_free(M);
  free(gx), free(gr), free(gs);
  return rc;
}

/* Which field differs first, for the failure message. */
static const char *first_diff(const parity_metrics *a, const parity_metrics *b) {
#define F(f) if (memcmp(&a->f, &b->f, sizeof a->f)) return #f;
  F(max_abs) F(rel_fro) F(max_ulp) F(median_ulp) F(max_rel) F(rel_floor) F(ref_max_abs) F(ref_fro) F(n)
  F(zero_ref) F(nonfinite) F(worst) F(worst_x) F(worst_ref) F(row_rel) F(row_worst) F(ulp_hist) F(rel_at)
  F(nonfinite_at) F(block_rel) F(elem_rel) F(elem_at) F(block_len) F(block_lo) F(block_hi) F(n_blocks)
  F(model.fro) F(model.elem) F(model.row) F(model.block) F(model)
#undef F
  return "padding";
}

/* The whole tensors' metrics; with s, the error model's statistics as one
 * process measures them group by group (test_metrics_stream holds the
 * rest to the whole's; the model's frontiers are the whole's only while
 * none fills up, and the groups' fold is the streamed run's definition). */
static void whole(const double *x, const double *r, const double *s, const int64_t d[4], const int64_t bl[4],
                  parity_metrics *m) {
  gdn_error e;
  gdn_error_init(&e);
  const parity_vals xv = parity_vals_f64(x), rv = parity_vals_f64(r);
  ck_assert_int_eq(parity_metrics_compute_v(xv, rv, d, GDN_DTYPE_F32, m, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_blocks_v(xv, rv, d, bl, m, &e), GDN_OK);
  if (!s) return;
  parity_metrics one;
  ck_assert_int_eq(dealt(x, r, s, d, bl, 1, 1, &one), GDN_OK);
  parity_metrics_model_v(xv, rv, s, d, bl, GDN_DTYPE_F32, m, &e); /* the fields beside the frontiers */
  m->model.elem = one.model.elem, m->model.row = one.model.row, m->model.block = one.model.block;
}

/* Every rank agrees (an int's minimum and maximum are equal). */
static int all_agree(int v) {
  int lo, hi;
  MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

/* The hazards of test_metrics_stream's fill, 6 heads, the tie on heads 1 and 4. */
static void fill(double *x, double *r, double *s, const int64_t d[4]) {
  const size_t n = numel(d), inner = (size_t)d[3];
  for (size_t i = 0; i < n; i++) {
    const int64_t h = (int64_t)(i / inner) % d[2];
    r[i] = (i % 23 == 0) ? 0 : ldexp(1.0 + 1e-3 * (double)((i * 7919) % 1013), (int)(i % 30) - 15) * ((i & 1) ? -1 : 1);
    if (h == 0) r[i] *= 1e-3;
    x[i] = (float)(r[i] * (1 + ldexp(1.0, -22 + (int)(i % 9))));
    s[i] = 0x1p-30 * (1 + (double)(i % 3));
  }
  const size_t t1 = 1 * inner + 5, t2 = (4 + 6 * 40) * inner + 3; /* heads 1 and 4 */
  r[t1] = r[t2] = 1.0, x[t1] = x[t2] = 1e6;
  x[n / 2 + 7] = NAN, x[n / 5 + 1] = INFINITY;
}

START_TEST(hazards_as_the_whole) {
  const int64_t d[4] = {2, 700, 6, 16}, bl[4] = {1, 64, 1, 16};
  const size_t n = numel(d);
  double *x = malloc(n * sizeof *x), *r = malloc(n * sizeof *r), *s = malloc(n * sizeof *s);
  for (int nf = 0; nf < 2; nf++) {
    fill(x, r, s, d);
    if (!nf) x[n / 2 + 7] = r[n / 2 + 7], x[n / 5 + 1] = r[n / 5 + 1];
    parity_metrics want, got;
    whole(x, r, s, d, bl, &want);
    memset(&got, 0, sizeof got);
    ck_assert_int_eq(dealt(x, r, s, d, bl, 1, 0, &got), GDN_OK);
    ck_assert_msg(!memcmp(&got, &want, sizeof got), "rank %d of %d, non-finite %d: %s differs", g_rank, g_size, nf,
                  first_diff(&got, &want));
    ck_assert(want.max_rel > 0 && want.elem_rel > 0 && want.row_rel > 0 && want.model.has);
    /* negative control: each rank's own floors */
    if (g_size > 1) {
      parity_metrics bad;
      memset(&bad, 0, sizeof bad);
      const int rc = dealt(x, r, s, d, bl, 0, 0, &bad);
      ck_assert(all_agree(rc)); /* an error ends every rank alike */
      ck_assert_msg(rc || memcmp(&bad, &want, sizeof bad), "pass A unmerged gave the whole's metrics");
    }
  }
  free(x), free(r), free(s);
}
END_TEST

START_TEST(median_three_ways) {
  for (int way = 0; way < 3; way++)
    for (int odd = 0; odd < 2; odd++) {
      const int64_t d[4] = {1, 150000 + odd, 4, 1}, bl[4] = {1, 64, 1, 1};
      const size_t n = numel(d);
      double *x = malloc(n * sizeof *x), *r = malloc(n * sizeof *r);
      for (size_t i = 0; i < n; i++) { /* ULP distance 1 + j 2^-24 */
        const uint64_t j = way == 0 ? 0 : way == 1 ? (i * 2654435761u) % 3000 : (i * 2654435761u) % (1u << 20);
        r[i] = 1.0 + ldexp(1.0 + ldexp((double)j, -24), -23);
        x[i] = 1.0;
      }
      parity_metrics want, got;
      whole(x, r, NULL, d, bl, &want);
      memset(&got, 0, sizeof got);
      ck_assert_int_eq(dealt(x, r, NULL, d, bl, 1, 0, &got), GDN_OK);
      ck_assert_msg(!memcmp(&got, &want, sizeof got), "rank %d of %d, way %d odd %d: %s differs (median %.17g vs %.17g)",
                    g_rank, g_size, way, odd, first_diff(&got, &want), got.median_ulp, want.median_ulp);
      ck_assert(way == 0 ? want.median_ulp == 1.0 : want.median_ulp > 1.0 && want.median_ulp < 1.0625);
      free(x), free(r);
    }
}
END_TEST

int main(int argc, char **argv) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_threads_set(2);
  if (parity_dist_start(&argc, &argv, &e)) {
    fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  g_rank = parity_dist_rank();
  g_size = parity_dist_size();
  Suite *su = suite_create("mpi_mstream");
  CKR_TCASE(su, "ranks", 600, hazards_as_the_whole, median_three_ways);
  int failed = ckr_run_with(su, CK_NOFORK, g_rank == 0 ? CK_NORMAL : CK_SILENT);
  int any = 0; /* a rank that failed mid-test may be between collectives: end them all */
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  parity_dist_end();
  return any ? 1 : 0;
}
