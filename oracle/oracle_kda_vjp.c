/* oracle_kda_vjp: validation, work items, threads and the certificate
 * (oracle_kda_vjp.h), as oracle_vjp.c does them for GDN: items (b, key head)
 * write disjoint slices of every gradient, workspaces are allocated before
 * the parallel region in thread order, the certificate is a maximum over
 * elements; nothing depends on the thread count. */
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "oracle_kda_internal.h"
#include "oracle_kda_vjp_internal.h"
#include "oracle_vjp_internal.h"

typedef struct kvworker {
  orc_kvjp ws[2]; /* at p, at P (certified only) */
  orc_vars scratch;
  orc_acc acc[GDN_GRADS_N];
} kvworker;

typedef struct kvjob {
  const gdn_inputs *in;
  const gdn_chgate *gate;
  const gdn_cotangents *ct;
  gdn_grads *out;
  int certified;
  int64_t *fail;
  orc_meter *meter; /* reverse-step token-heads done (oracle_vjp_config.progress) */
} kvjob;

static void kvworker_init(kvworker *w) {
  orc_kvjp_init(&w->ws[0]);
  orc_kvjp_init(&w->ws[1]);
  orc_vars_init(&w->scratch);
  for (int i = 0; i < GDN_GRADS_N; i++) orc_acc_init(&w->acc[i]);
}

static void kvworker_clear(kvworker *w) {
  orc_kvjp_clear(&w->ws[0]);
  orc_kvjp_clear(&w->ws[1]);
  orc_vars_clear(&w->scratch);
  for (int i = 0; i < GDN_GRADS_N; i++) orc_acc_clear(&w->acc[i]);
}

static int kvworker_alloc(kvworker *w, const gdn_shape *s, const oracle_vjp_config *cfg, mpfr_prec_t P, int certified,
                          gdn_error *e) {
  const int64_t K = orc_vjp_checkpoint(cfg, s->T);
  int rc = orc_kvjp_alloc(&w->ws[0], cfg->prec, s, K, s->Dv, e);
  if (rc || !certified) return rc;
  if ((rc = orc_kvjp_alloc(&w->ws[1], P, s, K, s->Dv, e)) ||
      (rc = orc_vars_alloc(&w->scratch, 1, P, "oracle_kda_vjp certificate scratch", e)))
    return rc;
  for (int i = 0; i < GDN_GRADS_N; i++)
    if ((rc = orc_acc_alloc(&w->acc[i], (int)cfg->prec, "oracle_kda_vjp certificate", e))) return rc;
  return GDN_OK;
}

static int emit(const kvjob *jb, kvworker *w, int ti, mpfr_t *x, mpfr_t *xr, int64_t n, int64_t stride, double *dst) {
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

static int emit_token(const kvjob *jb, kvworker *w, int64_t t) {
  const gdn_shape *s = &jb->in->shape;
  orc_kvjp *a = &w->ws[0], *r = jb->certified ? &w->ws[1] : &w->ws[0];
  gdn_grads *g = jb->out;
  const int64_t b = a->b, kh = a->kh, qk = ((b * s->T + t) * s->Hk + kh) * s->Dk;
  if (!emit(jb, w, GDN_GRAD_DQ, a->dq, r->dq, s->Dk, 1, g->dq + qk) ||
      !emit(jb, w, GDN_GRAD_DK, a->dk, r->dk, s->Dk, 1, g->dk + qk))
    return 0;
  for (int64_t jj = 0; jj < a->G; jj++) {
    const int64_t gi = (b * s->T + t) * s->Hv + kh * a->G + jj;
    if (!emit(jb, w, GDN_GRAD_DV, a->dv + jj * s->Dv, r->dv + jj * s->Dv, s->Dv, 1, g->dv + gi * s->Dv) ||
        !emit(jb, w, GDN_GRAD_DG, a->dg + jj * s->Dk, r->dg + jj * s->Dk, s->Dk, 1, g->dg + gi * s->Dk) ||
        !emit(jb, w, GDN_GRAD_DBETA, a->dbeta + jj, r->dbeta + jj, 1, 1, g->dbeta + gi))
      return 0;
  }
  return 1;
}

static void run_item(const kvjob *jb, kvworker *w, int64_t item) {
  const gdn_inputs *in = jb->in;
  const gdn_shape *s = &in->shape;
  const int64_t b = item / s->Hk, kh = item % s->Hk;
  const int np = jb->certified ? 2 : 1;
  orc_kvjp *a = &w->ws[0], *r = &w->ws[np - 1];
  for (int k = 0; k < np; k++) orc_kvjp_begin(&w->ws[k], in, jb->gate, jb->ct, b, kh, 0);
  for (int64_t m = a->nck - 1; m >= 0; m--) {
    for (int k = 0; k < np; k++) orc_kvjp_segment(&w->ws[k], in, jb->gate, m);
    const int64_t t1 = (m + 1) * a->K < s->T ? (m + 1) * a->K : s->T;
    for (int64_t t = t1 - 1; t >= m * a->K; t--) {
      for (int k = 0; k < np; k++) orc_kvjp_rstep(&w->ws[k], in, jb->gate, jb->ct, t);
      if (!emit_token(jb, w, t)) {
        jb->fail[item] = t;
        return;
      }
      if (t % ORC_METER_TOKENS == 0) /* tokens [t, t + ORC_METER_TOKENS) done: T in all */
        orc_meter_add(jb->meter, ((t + ORC_METER_TOKENS < s->T ? t + ORC_METER_TOKENS : s->T) - t) * a->G);
    }
  }
  for (int64_t jj = 0; jj < a->G; jj++) {
    double *dh0 = jb->out->dh0 + (b * s->Hv + kh * a->G + jj) * s->Dk * s->Dv;
    for (int64_t c = 0; c < s->Dv; c++)
      if (!emit(jb, w, GDN_GRAD_DH0, orc_kvjp_col(a->S, a, jj, c), orc_kvjp_col(r->S, r, jj, c), s->Dk, s->Dv,
                dh0 + c)) {
        jb->fail[item] = s->T;
        return;
      }
  }
}

static void cert_fill(oracle_vjp_certificate *cert, const oracle_vjp_config *cfg, mpfr_prec_t P, kvworker *ws,
                      int nw, oracle_tally *tally) {
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

static int kda_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                   const oracle_vjp_config *cfg, gdn_grads *out, oracle_vjp_certificate *cert, oracle_tally *tally,
                   gdn_error *e) {
  if (cert) memset(cert, 0, sizeof *cert);
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_kda_vjp: gradients missing (NULL)");
  gdn_grads_clear(out);
  int rc;
  if ((rc = oracle_vjp_config_validate(cfg, cert != NULL, e)) || (rc = orc_kda_check(in, gate, NULL, e)) ||
      (rc = gdn_cotangents_check(ct, &in->shape, "oracle_kda_vjp", e)))
    return rc;
  const gdn_shape *s = &in->shape;
  const mpfr_prec_t P = cfg->check_prec ? cfg->check_prec : cfg->prec + 64;
  if ((rc = gdn_chgrads_alloc(out, s, GDN_DTYPE_F64, e))) return rc;
  const int64_t n_items = s->B * s->Hk;
  const int threads = gdn_threads_get();
  const int nt = n_items < threads ? (int)n_items : threads;
  orc_meter meter; /* every item's reverse steps */
  orc_meter_init(&meter, cfg->progress, n_items * s->T * (s->Hv / s->Hk));
  kvjob jb = {in, gate, ct, out, cert != NULL, NULL, &meter};
  kvworker *ws = NULL;
  int nw = 0;
  if (!(jb.fail = gdn_malloc((size_t)n_items * sizeof(int64_t), "oracle_kda_vjp item status", e))) goto fail;
  for (int64_t i = 0; i < n_items; i++) jb.fail[i] = -1;
  if (!(ws = gdn_calloc((size_t)nt, sizeof(kvworker), "oracle_kda_vjp workers", e))) goto fail;
  for (; nw < nt; nw++) {
    kvworker_init(&ws[nw]);
    if (kvworker_alloc(&ws[nw], s, cfg, P, cert != NULL, e)) {
      nw++;
      goto fail;
    }
  }
#pragma omp parallel num_threads(nt)
  {
    kvworker *w = &ws[omp_get_thread_num()];
#pragma omp for schedule(dynamic)
    for (int64_t it = 0; it < n_items; it++) run_item(&jb, w, it);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
  }
  if (orc_vjp_report_fail(jb.fail, n_items, s, "oracle_kda_vjp", "MPFR's exponent range", ": |g| is too large", e))
    goto fail;
  orc_meter_done(&meter);
  if (cert) cert_fill(cert, cfg, P, ws, nw, tally);
  for (int i = 0; i < nw; i++) kvworker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  return GDN_OK;
fail:
  for (int i = 0; i < nw; i++) kvworker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  gdn_grads_clear(out);
  if (cert) memset(cert, 0, sizeof *cert);
  return e ? e->code : GDN_ERR_NOMEM;
}

int oracle_kda_vjp(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                   const oracle_vjp_config *cfg, gdn_grads *out, oracle_vjp_certificate *cert, gdn_error *e) {
  return kda_vjp(in, gate, ct, cfg, out, cert, NULL, e);
}

int oracle_kda_vjp_part(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                        const oracle_vjp_config *cfg, gdn_grads *out, oracle_tally *tally, gdn_error *e) {
  if (!tally || !cfg) {
    if (out) gdn_grads_clear(out);
    return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_kda_vjp: tally or config missing (NULL)");
  }
  int rc = oracle_vjp_config_validate(cfg, 1, e);
  if (!rc) rc = oracle_tally_alloc(tally, ORACLE_TALLY_VJP, (int)cfg->prec, -1, e);
  if (rc) {
    if (out) gdn_grads_clear(out);
    return rc;
  }
  oracle_vjp_certificate c;
  if ((rc = kda_vjp(in, gate, ct, cfg, out, &c, tally, e))) oracle_tally_clear(tally);
  return rc;
}
