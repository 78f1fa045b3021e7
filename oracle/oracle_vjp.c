/* oracle_vjp and oracle_vjp_certified: validation, work items, threads,
 * the certificate (oracle_vjp.h).
 *
 * Items (b, key head) write disjoint slices of every gradient (dq and dk by
 * key head; dv, dg, dbeta, dh0 by the item's value heads); the certificate
 * is a maximum over elements, exact in any order.  Workspaces are allocated
 * before the parallel region in thread order (fault injection).  Nothing
 * depends on the thread count.
 */
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "oracle_vjp_internal.h"

void oracle_vjp_config_init(oracle_vjp_config *cfg) {
  cfg->prec = 128;
  cfg->check_prec = 0;
  cfg->checkpoint = 0;
  cfg->progress = NULL;
}

int oracle_vjp_config_validate(const oracle_vjp_config *cfg, int certified, gdn_error *e) {
  if (!cfg) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_vjp config: missing (NULL)");
  int rc = orc_config_bits("oracle_vjp", "prec", (long)cfg->prec, e);
  if (!rc) rc = orc_config_nonneg("oracle_vjp", "checkpoint", cfg->checkpoint, " (0 = sqrt(T))", e);
  if (!rc) rc = orc_config_check_prec("oracle_vjp", (long)cfg->prec, (long)cfg->check_prec, certified, e);
  return rc;
}

/* K = ceil(sqrt(T)) unless configured (oracle_vjp.h: memory ~ (T/K + K)). */
int64_t orc_vjp_checkpoint(const oracle_vjp_config *cfg, int64_t T) {
  if (cfg->checkpoint > 0) return cfg->checkpoint < T ? cfg->checkpoint : T;
  int64_t K = (int64_t)ceil(sqrt((double)T));
  while (K * K < T) K++;
  while (K > 1 && (K - 1) * (K - 1) >= T) K--;
  return K;
}

typedef struct vworker {
  orc_vjp ws[2]; /* at p, at P (certified only) */
  orc_vars scratch;
  orc_acc acc[GDN_GRADS_N];
} vworker;

typedef struct vjob {
  const gdn_inputs *in;
  const gdn_cotangents *ct;
  gdn_grads *out;
  int certified;
  int64_t *fail; /* per item: -1, or the token (T: dh0) of the first non-finite value */
  orc_meter *meter; /* reverse-step token-heads done (oracle_vjp_config.progress) */
} vjob;

static void vworker_init(vworker *w) {
  orc_vjp_init(&w->ws[0]);
  orc_vjp_init(&w->ws[1]);
  orc_vars_init(&w->scratch);
  for (int i = 0; i < GDN_GRADS_N; i++) orc_acc_init(&w->acc[i]);
}

static void vworker_clear(vworker *w) {
  orc_vjp_clear(&w->ws[0]);
  orc_vjp_clear(&w->ws[1]);
  orc_vars_clear(&w->scratch);
  for (int i = 0; i < GDN_GRADS_N; i++) orc_acc_clear(&w->acc[i]);
}

static int vworker_alloc(vworker *w, const gdn_shape *s, const oracle_vjp_config *cfg,
                         mpfr_prec_t P, int certified, gdn_error *e) {
  int64_t K = orc_vjp_checkpoint(cfg, s->T);
  int rc = orc_vjp_alloc(&w->ws[0], cfg->prec, s, K, s->Dv, e);
  if (rc || !certified) return rc;
  if ((rc = orc_vjp_alloc(&w->ws[1], P, s, K, s->Dv, e)) ||
      (rc = orc_vars_alloc(&w->scratch, 1, P, "oracle_vjp certificate scratch", e)))
    return rc;
  for (int i = 0; i < GDN_GRADS_N; i++)
    if ((rc = orc_acc_alloc(&w->acc[i], (int)cfg->prec, "oracle_vjp certificate", e))) return rc;
  return GDN_OK;
}

/* n values x (p bits) to binary64 at dst, each against xr (P bits) in the
 * certificate of tensor ti; 0 on a non-number. */
static int emit(const vjob *jb, vworker *w, int ti, mpfr_t *x, mpfr_t *xr, int64_t n,
                int64_t stride, double *dst) {
  for (int64_t i = 0; i < n; i++) {
    if (!mpfr_number_p(x[i])) return 0;
    dst[i * stride] = mpfr_get_d(x[i], MPFR_RNDN);
    if (jb->certified) {
      if (!mpfr_number_p(xr[i])) return 0;
      orc_acc_add(&w->acc[ti], x[i], xr[i], w->scratch.v[0]);
    }
  }
  return 1;
}

static int emit_token(const vjob *jb, vworker *w, int64_t t) {
  const gdn_shape *s = &jb->in->shape;
  orc_vjp *a = &w->ws[0], *r = jb->certified ? &w->ws[1] : &w->ws[0];
  gdn_grads *g = jb->out;
  const int64_t b = a->b, kh = a->kh, qk = ((b * s->T + t) * s->Hk + kh) * s->Dk;
  if (!emit(jb, w, GDN_GRAD_DQ, a->dq, r->dq, s->Dk, 1, g->dq + qk) ||
      !emit(jb, w, GDN_GRAD_DK, a->dk, r->dk, s->Dk, 1, g->dk + qk))
    return 0;
  for (int64_t jj = 0; jj < a->G; jj++) {
    const int64_t gate = (b * s->T + t) * s->Hv + kh * a->G + jj;
    if (!emit(jb, w, GDN_GRAD_DV, a->dv + jj * a->nc, r->dv + jj * r->nc, s->Dv, 1,
              g->dv + gate * s->Dv) ||
        !emit(jb, w, GDN_GRAD_DG, a->dg + jj, r->dg + jj, 1, 1, g->dg + gate) ||
        !emit(jb, w, GDN_GRAD_DBETA, a->dbeta + jj, r->dbeta + jj, 1, 1, g->dbeta + gate))
      return 0;
  }
  return 1;
}

static void run_item(const vjob *jb, vworker *w, int64_t item) {
  const gdn_inputs *in = jb->in;
  const gdn_shape *s = &in->shape;
  const int64_t b = item / s->Hk, kh = item % s->Hk;
  const int np = jb->certified ? 2 : 1;
  orc_vjp *a = &w->ws[0];
  for (int k = 0; k < np; k++) orc_vjp_begin(&w->ws[k], in, jb->ct, b, kh, 0);
  for (int64_t m = a->nck - 1; m >= 0; m--) {
    for (int k = 0; k < np; k++) orc_vjp_segment(&w->ws[k], in, m);
    const int64_t t1 = (m + 1) * a->K < s->T ? (m + 1) * a->K : s->T;
    for (int64_t t = t1 - 1; t >= m * a->K; t--) {
      for (int k = 0; k < np; k++) orc_vjp_rstep(&w->ws[k], in, jb->ct, t);
      if (!emit_token(jb, w, t)) {
        jb->fail[item] = t;
        return;
      }
      if (t % ORC_METER_TOKENS == 0) /* tokens [t, t + ORC_METER_TOKENS) done: T in all */
        orc_meter_add(jb->meter, ((t + ORC_METER_TOKENS < s->T ? t + ORC_METER_TOKENS : s->T) - t) * a->G);
    }
  }
  orc_vjp *r = jb->certified ? &w->ws[1] : a;
  for (int64_t jj = 0; jj < a->G; jj++) {
    double *dh0 = jb->out->dh0 + (b * s->Hv + kh * a->G + jj) * s->Dk * s->Dv;
    for (int64_t c = 0; c < s->Dv; c++)
      if (!emit(jb, w, GDN_GRAD_DH0, orc_vjp_col(a->S, a, jj, c), orc_vjp_col(r->S, r, jj, c),
                s->Dk, s->Dv, dh0 + c)) {
        jb->fail[item] = s->T;
        return;
      }
  }
}

int orc_vjp_report_fail(const int64_t *fail, int64_t n_items, const gdn_shape *s, const char *who,
                        const char *range, const char *hint, gdn_error *e) {
  for (int64_t it = 0; it < n_items; it++) {
    if (fail[it] < 0) continue;
    const long long b = it / s->Hk, kh = it % s->Hk;
    if (fail[it] < s->T)
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "%s: a value left %s (a non-finite value) at b=%lld, key head %lld, token t=%lld%s",
                           who, range, b, kh, (long long)fail[it], hint);
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: dh0 left %s (a non-finite value) at b=%lld, key head %lld%s",
                         who, range, b, kh, hint);
  }
  return GDN_OK;
}

int orc_vjp_run(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_config *cfg,
                gdn_grads *out, oracle_vjp_certificate *cert, const unsigned char *sel,
                oracle_tally *tally, gdn_error *e) {
  if (cert) memset(cert, 0, sizeof *cert);
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_vjp: gradients missing (NULL)");
  gdn_grads_clear(out);
  int rc;
  if ((rc = oracle_vjp_config_validate(cfg, cert != NULL, e)) || (rc = orc_check_inputs(in, e)) ||
      (rc = gdn_cotangents_check(ct, &in->shape, "oracle_vjp", e)))
    return rc;
  const gdn_shape *s = &in->shape;
  const mpfr_prec_t P = cfg->check_prec ? cfg->check_prec : cfg->prec + 64;
  if ((rc = gdn_grads_alloc(out, s, GDN_DTYPE_F64, e))) return rc;
  const int64_t n_items = s->B * s->Hk;
  const int threads = gdn_threads_get();
  const int nt = n_items < threads ? (int)n_items : threads;
  int64_t n_sel = 0;
  for (int64_t i = 0; i < n_items; i++) n_sel += !sel || sel[i];
  orc_meter meter; /* the selected items' reverse steps: the line reaches 100 % when they are done */
  orc_meter_init(&meter, cfg->progress, n_sel * s->T * (s->Hv / s->Hk));
  vjob jb = {in, ct, out, cert != NULL, NULL, &meter};
  vworker *ws = NULL;
  int nw = 0;
  if (!(jb.fail = gdn_malloc((size_t)n_items * sizeof(int64_t), "oracle_vjp item status", e)))
    goto fail;
  for (int64_t i = 0; i < n_items; i++) jb.fail[i] = -1;
  if (!(ws = gdn_calloc((size_t)nt, sizeof(vworker), "oracle_vjp workers", e))) goto fail;
  for (; nw < nt; nw++) {
    vworker_init(&ws[nw]);
    if (vworker_alloc(&ws[nw], s, cfg, P, cert != NULL, e)) {
      nw++;
      goto fail;
    }
  }
#pragma omp parallel num_threads(nt)
  {
    vworker *w = &ws[omp_get_thread_num()];
#pragma omp for schedule(dynamic)
    for (int64_t it = 0; it < n_items; it++)
      if (!sel || sel[it]) run_item(&jb, w, it);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
  }
  if (orc_vjp_report_fail(jb.fail, n_items, &in->shape, "oracle_vjp", "MPFR's exponent range",
                          ": |g| is too large", e)) {
    for (int64_t it = 0; tally && it < n_items; it++)
      if (jb.fail[it] >= 0) {
        tally->failed_head = it; /* the item (b, key head) reported */
        break;
      }
    goto fail;
  }
  orc_meter_done(&meter);
  if (cert) {
    cert->precision_bits = (int)cfg->prec;
    cert->check_bits = (int)P;
    cert->certified_bits = (int)cfg->prec;
    for (int ti = 0; ti < GDN_GRADS_N; ti++) {
      for (int i = 1; i < nw; i++) orc_acc_merge(&ws[0].acc[ti], &ws[i].acc[ti]);
      cert->certified[ti] = orc_acc_bits(&ws[0].acc[ti], &cert->floor[ti]);
      if (cert->certified[ti] < cert->certified_bits) cert->certified_bits = cert->certified[ti];
      if (tally) orc_tally_put(tally, ti, &ws[0].acc[ti]);
    }
  }
  for (int i = 0; i < nw; i++) vworker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  return GDN_OK;
fail:
  for (int i = 0; i < nw; i++) vworker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  gdn_grads_clear(out);
  if (cert) memset(cert, 0, sizeof *cert);
  return e ? e->code : GDN_ERR_NOMEM;
}

int oracle_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_config *cfg,
               gdn_grads *out, gdn_error *e) {
  return orc_vjp_run(in, ct, cfg, out, NULL, NULL, NULL, e);
}

int oracle_vjp_certified(const gdn_inputs *in, const gdn_cotangents *ct,
                         const oracle_vjp_config *cfg, gdn_grads *out,
                         oracle_vjp_certificate *cert, gdn_error *e) {
  if (!cert) {
    if (out) gdn_grads_clear(out);
    return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_vjp: certificate missing (NULL)");
  }
  return orc_vjp_run(in, ct, cfg, out, cert, NULL, NULL, e);
}
