/* parity_dist_oracle: the oracle's forward dealt across the ranks
 * (parity_dist.h).
 *
 * The rule: head h = b Hv + j (the oracle's independent unit, oracle_part.h)
 * is computed by rank h mod N.  Every head costs the same (T Dk Dv state
 * updates), so ranks get floor or ceil(B Hv / N) heads each.  Then, on
 * every rank, in this order (so every rank makes the same calls):
 *   1. its heads: oracle_run_part / oracle_run_dd_part, into a full-size
 *      `out` (the other heads zero) and a tally;
 *   2. the statuses, all-gathered as (code, failed_head): if any rank
 *      failed, the error of the least failed_head (-1, an error that is not
 *      a head's, first; then the lowest rank) is broadcast, and every rank
 *      returns it -- the message the one-process run gives, since that run
 *      reports the first failing head in (b, j) order;
 *   3. the tallies, all-gathered (binary64s: exact) and merged in rank
 *      order (a maximum: exact in any order), give the certificate;
 *   4. each head broadcast from its owner into every rank's `out` (its bits:
 *      MPI_DOUBLE), so every rank holds the whole reference, as in one
 *      process, and goes on with the case identically.
 * Communication: per rank, 2 int64 and one tally out (1 + 4 (p + 1) doubles
 * for MPFR at p bits, 1 + 8 x 107 for dd: a few KiB), and the outputs of
 * its heads, 8 (T Dv + Dk Dv) bytes a head, to every other rank.
 */
#include <string.h>

#include "parity_dist.h"

#include "gdn_alloc.h"
#include "gdn_config.h"

#if GDN_HAVE_MPI
#include "gdn_mpi.h"

static int g_collective;

void parity_dist_set_collective(int on) { g_collective = on; }
int parity_dist_collective(void) { return g_collective && parity_dist_size() > 1; }

/* The units (heads; VJP items) of `rank` among nh (or, under
 * GDN_TEST_MPI_DIE=R:oracle-deal, rank R computing rank R + 1's: a wrong
 * subset the tests must catch). */
static unsigned char *deal(int64_t nh, int rank, int size, gdn_error *e) {
  unsigned char *m = gdn_calloc((size_t)nh, 1, "oracle heads of this rank", e);
  if (!m) return NULL;
  int who = gdn_mpi_test_fault(rank, "oracle-deal") ? (rank + 1) % size : rank;
  for (int64_t h = who; h < nh; h += size) m[h] = 1;
  return m;
}

/* Step 2: GDN_OK on every rank, or the same error on every rank. */
static int agree(int rc, const gdn_error *mine, int64_t failed_head, int size, gdn_error *e) {
  int64_t st[2] = {rc, rc ? failed_head : 0}, *all = gdn_malloc(2 * (size_t)size * sizeof *all, "oracle statuses", e);
  if (!all) return GDN_ERR_NOMEM; /* a rank without 16 N bytes: MPI_Abort follows */
  int arc = gdn_mpi_allgather_i64(st, 2, all, e), who = -1;
  for (int r = 0; !arc && r < size; r++)
    if (all[2 * r] && (who < 0 || all[2 * r + 1] < all[2 * who + 1])) who = r;
  gdn_free(all);
  if (arc || who < 0) return arc;
  gdn_error pick = *mine;
  if ((arc = gdn_mpi_bcast_bytes(&pick, sizeof pick, who, e))) return arc;
  *e = pick;
  return e->code ? e->code : GDN_ERR_INTERNAL;
}

/* Step 3: the tallies of every rank merged in rank order into *t. */
static int merge_all(oracle_tally *t, int size, gdn_error *e) {
  double *all = gdn_malloc(t->n * (size_t)size * sizeof *all, "oracle tallies", e);
  if (!all) return GDN_ERR_NOMEM;
  int rc = gdn_mpi_allgather_f64(t->v, t->n, all, e);
  oracle_tally one, sum;
  oracle_tally_init(&one);
  oracle_tally_init(&sum);
  if (!rc) rc = oracle_tally_alloc(&sum, t->tier, t->cap, 0, e);
  if (!rc) rc = oracle_tally_alloc(&one, t->tier, t->cap, 0, e);
  for (int r = 0; !rc && r < size; r++) {
    memcpy(one.v, all + (size_t)r * t->n, t->n * sizeof *all);
    if (r == 0)
      memcpy(sum.v, one.v, t->n * sizeof *all);
    else
      rc = oracle_tally_merge(&sum, &one, e);
  }
  if (!rc) memcpy(t->v, sum.v, t->n * sizeof *all);
  oracle_tally_clear(&one);
  oracle_tally_clear(&sum);
  gdn_free(all);
  return rc;
}

/* Steps 1-4 for either tier; the certificate is made by the caller. */
static int dealt(const gdn_inputs *in, const void *cfg, int dd, gdn_outputs *out, oracle_tally *t,
                 gdn_error *e) {
  const int rank = parity_dist_rank(), size = parity_dist_size();
  gdn_error mine;
  gdn_error_init(&mine);
  unsigned char *heads = in ? deal(in->shape.B * in->shape.Hv, rank, size, &mine) : NULL;
  int rc = in ? (heads ? GDN_OK : mine.code) : gdn_error_set(&mine, GDN_ERR_INTERNAL, "oracle: inputs missing (NULL)");
  if (!rc)
    rc = dd ? oracle_run_dd_part(in, cfg, heads, out, t, &mine) : oracle_run_part(in, cfg, heads, out, t, &mine);
  gdn_free(heads);
  gdn_mpi_test_die(rank, "oracle"); /* testing: a rank lost during the oracle */
  if ((rc = agree(rc, &mine, t->failed_head, size, e))) goto fail;
  if ((rc = merge_all(t, size, e))) goto fail;
  const gdn_shape *s = &in->shape;
  for (int64_t h = 0; h < s->B * s->Hv; h++)
    if ((rc = gdn_mpi_bcast_head(out, h / s->Hv, h % s->Hv, (int)(h % size), e))) goto fail;
  return GDN_OK;
fail:
  gdn_outputs_clear(out);
  return rc;
}

static int dealing(void) { return g_collective && parity_dist_size() > 1; }

int parity_dist_oracle_mpfr(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out,
                            oracle_certificate *cert, gdn_error *e) {
  if (!dealing()) return oracle_run_certified(in, cfg, out, cert, e);
  memset(cert, 0, sizeof *cert);
  oracle_tally t;
  oracle_tally_init(&t);
  int rc = dealt(in, cfg, 0, out, &t, e);
  if (!rc && (rc = oracle_tally_certificate(&t, cfg, cert, e))) gdn_outputs_clear(out);
  oracle_tally_clear(&t);
  return rc;
}

int parity_dist_oracle_dd(const gdn_inputs *in, const oracle_dd_config *cfg, gdn_outputs *out,
                          oracle_dd_certificate *cert, gdn_error *e) {
  if (!dealing()) return oracle_run_dd(in, cfg, out, cert, e);
  memset(cert, 0, sizeof *cert);
  oracle_tally t;
  oracle_tally_init(&t);
  int rc = dealt(in, cfg, 1, out, &t, e);
  if (!rc && (rc = oracle_tally_dd_certificate(&t, &in->shape, cfg, cert, e))) gdn_outputs_clear(out);
  oracle_tally_clear(&t);
  return rc;
}

/* The VJP's steps 1-4 (either tier), by items (b, key head): item
 * b Hk + kh on rank (b Hk + kh) mod N, its gradients broadcast from there;
 * the certificate is the caller's. */
static int dealt_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const void *cfg, int dd, gdn_grads *out,
                     oracle_tally *t, gdn_error *e) {
  const int rank = parity_dist_rank(), size = parity_dist_size();
  const gdn_shape *s = &in->shape;
  gdn_error mine;
  gdn_error_init(&mine);
  unsigned char *items = deal(s->B * s->Hk, rank, size, &mine);
  int rc = !items ? mine.code
           : dd   ? oracle_vjp_dd_part(in, ct, cfg, items, out, t, &mine)
                  : oracle_vjp_part(in, ct, cfg, items, out, t, &mine);
  gdn_free(items);
  gdn_mpi_test_die(rank, "oracle");
  if (!(rc = agree(rc, &mine, t->failed_head, size, e)) && !(rc = merge_all(t, size, e)))
    for (int64_t it = 0; !rc && it < s->B * s->Hk; it++)
      rc = gdn_mpi_bcast_grads_item(out, it / s->Hk, it % s->Hk, (int)(it % size), e);
  if (rc) gdn_grads_clear(out);
  return rc;
}

int parity_dist_oracle_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_config *cfg,
                           gdn_grads *out, oracle_vjp_certificate *cert, gdn_error *e) {
  if (!dealing() || !in) return oracle_vjp_certified(in, ct, cfg, out, cert, e);
  memset(cert, 0, sizeof *cert);
  oracle_tally t;
  oracle_tally_init(&t);
  int rc = dealt_vjp(in, ct, cfg, 0, out, &t, e);
  if (!rc && (rc = oracle_tally_vjp_certificate(&t, cfg, cert, e))) gdn_grads_clear(out);
  oracle_tally_clear(&t);
  return rc;
}

int parity_dist_oracle_vjp_dd(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_dd_config *cfg,
                              gdn_grads *out, oracle_vjp_dd_certificate *cert, gdn_error *e) {
  if (!dealing() || !in) return oracle_vjp_dd(in, ct, cfg, out, cert, e);
  memset(cert, 0, sizeof *cert);
  oracle_tally t;
  oracle_tally_init(&t);
  int rc = dealt_vjp(in, ct, cfg, 1, out, &t, e);
  if (!rc && (rc = oracle_tally_vjp_dd_certificate(&t, &in->shape, cfg, cert, e))) gdn_grads_clear(out);
  oracle_tally_clear(&t);
  return rc;
}

#else /* one process */

void parity_dist_set_collective(int on) { (void)on; }
int parity_dist_collective(void) { return 0; }
int parity_dist_oracle_mpfr(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out,
                            oracle_certificate *cert, gdn_error *e) {
  return oracle_run_certified(in, cfg, out, cert, e);
}
int parity_dist_oracle_dd(const gdn_inputs *in, const oracle_dd_config *cfg, gdn_outputs *out,
                          oracle_dd_certificate *cert, gdn_error *e) {
  return oracle_run_dd(in, cfg, out, cert, e);
}
int parity_dist_oracle_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_config *cfg,
                           gdn_grads *out, oracle_vjp_certificate *cert, gdn_error *e) {
  return oracle_vjp_certified(in, ct, cfg, out, cert, e);
}
int parity_dist_oracle_vjp_dd(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_dd_config *cfg,
                              gdn_grads *out, oracle_vjp_dd_certificate *cert, gdn_error *e) {
  return oracle_vjp_dd(in, ct, cfg, out, cert, e);
}
#endif
