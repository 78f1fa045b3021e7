/* parity_dist_merge (parity_dist_merge.h): parts exchanged by broadcasts
 * from each rank in turn (parity_dist_bcast), so it needs nothing of MPI
 * beyond what parity_dist gives, and is the one-process no-op without it. */
#include "parity_dist_merge.h"

#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "parity_dist.h"

/* Every rank's (status, bytes); the lowest failing rank's error on all. */
static int agree(int status, uint64_t n, uint64_t *sizes, int size, gdn_error *e) {
  int who = -1, rc = GDN_OK;
  for (int r = 0; r < size && !rc; r++) {
    uint64_t h[2] = {(uint64_t)(int64_t)status, n};
    if ((rc = parity_dist_bcast(h, sizeof h, r, e))) break;
    sizes[r] = h[1];
    if (h[0] && who < 0) who = r;
  }
  if (rc || who < 0) return rc;
  gdn_error pick = *e;
  if (parity_dist_rank() == who && !status) gdn_error_set(&pick, GDN_ERR_INTERNAL, "failed");
  if ((rc = parity_dist_bcast(&pick, sizeof pick, who, e))) return rc;
  if (parity_dist_rank() == who) return status;
  rc = pick.code ? pick.code : GDN_ERR_INTERNAL;
  return gdn_error_set(e, rc, "rank %d: %s", who, pick.msg);
}

int parity_dist_allmerge(int status, const void *mine, size_t n, parity_dist_merge_fn merge, void *ctx, gdn_error *e) {
  const int size = parity_dist_size(), me = parity_dist_rank();
  if (size == 1) return status;
  uint64_t *sizes = gdn_calloc((size_t)size, sizeof *sizes, "merge sizes", e);
  if (!sizes) return GDN_ERR_NOMEM; /* MPI_Abort follows the caller's error */
  int rc = agree(status, n, sizes, size, e);
  uint64_t most = 0;
  for (int r = 0; r < size; r++)
    if (r != me && sizes[r] > most) most = sizes[r];
  void *buf = rc ? NULL : gdn_malloc(most ? (size_t)most : 1, "a rank's part", e);
  if (!rc && !buf) rc = GDN_ERR_NOMEM;
  int failed = GDN_OK; /* a part this rank could not merge: the others still get theirs, then all agree */
  gdn_error mine_e;
  gdn_error_init(&mine_e);
  for (int r = 0; r < size && !rc; r++) {
    if (r == me) rc = parity_dist_bcast((void *)mine, n, r, e);
    else if (!(rc = parity_dist_bcast(buf, (size_t)sizes[r], r, e)) && !failed)
      failed = merge(ctx, r, buf, (size_t)sizes[r], &mine_e);
  }
  if (!rc) {
    if (failed) *e = mine_e;
    rc = agree(failed, 0, sizes, size, e);
  }
  gdn_free(buf);
  gdn_free(sizes);
  return rc;
}

typedef struct {
  void *v;
  size_t n;
  int op; /* 0 sum i64, 1 min f64, 2 max f64 */
} fold;

static int fold_part(void *ctx, int rank, const void *part, size_t n, gdn_error *e) {
  fold *f = ctx;
  (void)rank;
  if (n != f->n * 8) return gdn_error_set(e, GDN_ERR_INTERNAL, "merging over ranks: %zu bytes, not %zu", n, f->n * 8);
  for (size_t i = 0; i < f->n; i++) {
    if (f->op == 0) {
      int64_t b;
      memcpy(&b, (const char *)part + 8 * i, 8);
      ((int64_t *)f->v)[i] += b;
      continue;
    }
    double b, *a = (double *)f->v + i;
    memcpy(&b, (const char *)part + 8 * i, 8);
    if (f->op == 1 ? b < *a : b > *a) *a = b;
  }
  return GDN_OK;
}

/* The others' parts folded into a copy, so mine is what each rank sent. */
static int fold_all(int status, void *v, size_t n, int op, gdn_error *e) {
  if (parity_dist_size() == 1) return status;
  void *acc = gdn_malloc(n ? n * 8 : 1, "merged values", e);
  int rc = acc ? GDN_OK : GDN_ERR_NOMEM;
  if (!rc) memcpy(acc, v, n * 8);
  fold f = {acc, n, op};
  if (!rc) rc = parity_dist_allmerge(status, v, n * 8, fold_part, &f, e);
  if (!rc) memcpy(v, acc, n * 8);
  gdn_free(acc);
  return rc;
}

int parity_dist_sum_i64(int status, int64_t *v, size_t n, gdn_error *e) { return fold_all(status, v, n, 0, e); }
int parity_dist_min_f64(int status, double *v, size_t n, gdn_error *e) { return fold_all(status, v, n, 1, e); }
int parity_dist_max_f64(int status, double *v, size_t n, gdn_error *e) { return fold_all(status, v, n, 2, e); }
