/* oracle_kda_vjp_dd: the KDA VJP's double-word tier and its sampled
 * certificate (oracle_kda_vjp.h): work items (b, key head), threads, the
 * comparison of the dd item (oracle_kda_vjp_dd_item.c) with oracle_kda_vjp's
 * MPFR workspace run on the sampled columns only, errors.  The
 * configuration and certificate are the GDN dd VJP's (oracle_vjp.h), the
 * comparison rule and tallies oracle_cert.c's (orc_acc). */
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_chgrads.h"
#include "gdn_threads.h"
#include "oracle_kda_internal.h"
#include "oracle_kda_vjp_dd_internal.h"
#include "oracle_kda_vjp_internal.h"

enum { KVDD_EXACT_PREC = 2200 }; /* holds any double-word value exactly */

typedef struct kdworker {
  orc_kvdd dd;
  orc_kvjp mp;
  orc_vars scr; /* [0] a dd value exactly, [1] scratch */
  orc_acc acc[GDN_GRADS_N];
} kdworker;

typedef struct kdjob {
  const gdn_inputs *in;
  const gdn_chgate *gate;
  const gdn_cotangents *ct;
  gdn_grads *out;
  int64_t ns;
  int64_t *fail; /* per item: -1, or the token (T: dh0) of the first non-finite value */
  int64_t head0, whole_hv;
  orc_meter *meter; /* reverse-step token-heads done (oracle_vjp_dd_config.progress) */
} kdjob;

static void kdworker_init(kdworker *w) {
  orc_kvdd_init(&w->dd);
  orc_kvjp_init(&w->mp);
  orc_vars_init(&w->scr);
  for (int i = 0; i < GDN_GRADS_N; i++) orc_acc_init(&w->acc[i]);
}

static void kdworker_clear(kdworker *w) {
  orc_kvdd_clear(&w->dd);
  orc_kvjp_clear(&w->mp);
  orc_vars_clear(&w->scr);
  for (int i = 0; i < GDN_GRADS_N; i++) orc_acc_clear(&w->acc[i]);
}

static int kdworker_alloc(kdworker *w, const gdn_shape *s, const oracle_vjp_dd_config *cfg, int64_t ns, gdn_error *e) {
  oracle_vjp_config vc;
  oracle_vjp_config_init(&vc);
  vc.checkpoint = cfg->checkpoint;
  const int64_t K = orc_vjp_checkpoint(&vc, s->T);
  int rc = orc_kvdd_alloc(&w->dd, s, K, ns, e);
  if (rc || ns == 0) return rc;
  if ((rc = orc_kvjp_alloc(&w->mp, cfg->sample_prec, s, K, ns, e)) ||
      (rc = orc_vars_alloc(&w->scr, 2, cfg->sample_prec + KVDD_EXACT_PREC, "oracle_kda_vjp_dd certificate scratch",
                           e)))
    return rc;
  for (int i = 0; i < GDN_GRADS_N; i++)
    if ((rc = orc_acc_alloc(&w->acc[i], ORACLE_DD_BITS, "oracle_kda_vjp_dd certificate", e))) return rc;
  return GDN_OK;
}

/* 0 if the MPFR value is not a number. */
static int cmp(kdworker *w, int ti, orc_dd x, mpfr_srcptr r) {
  if (!mpfr_number_p(r)) return 0;
  mpfr_set_d(w->scr.v[0], x.hi, MPFR_RNDN);
  mpfr_add_d(w->scr.v[0], w->scr.v[0], x.lo, MPFR_RNDN); /* exact */
  orc_acc_add(&w->acc[ti], w->scr.v[0], r, w->scr.v[1]);
  return 1;
}

static int finite_all(const double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return 0;
  return 1;
}

static int token_ok(const kdjob *jb, const orc_vdd *d, int64_t t) {
  const gdn_shape *s = &jb->in->shape;
  const gdn_grads *g = jb->out;
  const int64_t qk = ((d->b * s->T + t) * s->Hk + d->kh) * s->Dk, gt = (d->b * s->T + t) * s->Hv + d->kh * d->G;
  return finite_all(g->dq + qk, s->Dk) && finite_all(g->dk + qk, s->Dk) &&
         finite_all(g->dg + gt * s->Dk, d->G * s->Dk) && finite_all(g->dbeta + gt, d->G) &&
         finite_all(g->dv + gt * s->Dv, d->G * s->Dv);
}

static int sample_token(kdworker *w) {
  orc_kvdd *k = &w->dd;
  orc_vdd *d = &k->v;
  orc_kvjp *m = &w->mp;
  for (int64_t i = 0; i < d->Dk; i++)
    if (!cmp(w, GDN_GRAD_DQ, d->sQ[i], m->dQ[i]) || !cmp(w, GDN_GRAD_DK, d->sK[i], m->dK[i])) return 0;
  for (int64_t jj = 0; jj < d->G; jj++) {
    if (!cmp(w, GDN_GRAD_DBETA, d->sb[jj], m->dbeta[jj])) return 0;
    for (int64_t i = 0; i < d->Dk; i++)
      if (!cmp(w, GDN_GRAD_DG, k->sg[jj * d->Dk + i], m->dg[jj * d->Dk + i])) return 0;
    for (int64_t c = 0; c < d->ns; c++)
      if (!cmp(w, GDN_GRAD_DV, d->dv[jj * d->Dv + d->s0 + c], m->dv[jj * d->ns + c])) return 0;
  }
  return 1;
}

/* dh0 from the adjoint after token 0, the sampled columns compared; 0 on a
 * non-finite value. */
static int emit_dh0(const kdjob *jb, kdworker *w) {
  const gdn_shape *s = &jb->in->shape;
  const orc_vdd *d = &w->dd.v;
  for (int64_t jj = 0; jj < d->G; jj++) {
    double *dh0 = jb->out->dh0 + (d->b * s->Hv + d->kh * d->G + jj) * s->Dk * s->Dv;
    for (int64_t c = 0; c < s->Dv; c++)
      for (int64_t i = 0; i < s->Dk; i++) {
        const size_t at = (size_t)((jj * s->Dk + i) * s->Dv + c);
        const orc_dd x = {d->S[at], d->S[d->st + at]};
        dh0[i * s->Dv + c] = x.hi;
        int ok = isfinite(x.hi);
        if (ok && jb->ns && c >= d->s0 && c < d->s0 + d->ns)
          ok = cmp(w, GDN_GRAD_DH0, x, orc_kvjp_col(w->mp.S, &w->mp, jj, c - d->s0)[i]);
        if (!ok) return 0;
      }
  }
  return 1;
}

static void run_item(const kdjob *jb, kdworker *w, int64_t item) {
  const gdn_inputs *in = jb->in;
  const gdn_shape *s = &in->shape;
  const int64_t b = item / s->Hk, kh = item % s->Hk;
  orc_vdd *d = &w->dd.v;
  d->s0 = jb->ns ? oracle_dd_sample_start_in(s, jb->ns, b, kh * d->G, jb->head0, jb->whole_hv) : 0;
  int64_t bad;
  if (!orc_kvdd_begin(&w->dd, in, jb->gate, jb->ct, b, kh, &bad)) {
    jb->fail[item] = bad;
    return;
  }
  if (jb->ns) orc_kvjp_begin(&w->mp, in, jb->gate, jb->ct, b, kh, d->s0);
  for (int64_t m = d->nck - 1; m >= 0; m--) {
    orc_kvdd_segment(&w->dd, in, jb->gate, m);
    if (jb->ns) orc_kvjp_segment(&w->mp, in, jb->gate, m);
    const int64_t t1 = (m + 1) * d->K < s->T ? (m + 1) * d->K : s->T;
    for (int64_t t = t1 - 1; t >= m * d->K; t--) {
      orc_kvdd_rstep(&w->dd, in, jb->gate, jb->ct, jb->out, t);
      int ok = token_ok(jb, d, t);
      if (ok && jb->ns) {
        orc_kvjp_rstep(&w->mp, in, jb->gate, jb->ct, t);
        ok = sample_token(w);
      }
      if (!ok) {
        jb->fail[item] = t;
        return;
      }
      if (t % ORC_METER_TOKENS == 0) /* tokens [t, t + ORC_METER_TOKENS) done: T in all */
        orc_meter_add(jb->meter, ((t + ORC_METER_TOKENS < s->T ? t + ORC_METER_TOKENS : s->T) - t) * d->G);
    }
  }
  if (!emit_dh0(jb, w)) jb->fail[item] = s->T;
}

static void fill_cert(oracle_vjp_dd_certificate *cert, kdworker *ws, int nw, const gdn_shape *s,
                      const oracle_vjp_dd_config *cfg, int64_t ns) {
  cert->precision_bits = ORACLE_DD_BITS;
  cert->check_bits = (int)cfg->sample_prec;
  cert->sample_columns = ns;
  cert->sampled_columns = s->B * s->Hv * ns;
  cert->total_columns = s->B * s->Hv * s->Dv;
  if (ns == 0) return;
  cert->certified_bits = cert->normwise_bits = ORACLE_DD_BITS;
  for (int ti = 0; ti < GDN_GRADS_N; ti++) {
    for (int i = 1; i < nw; i++) orc_acc_merge(&ws[0].acc[ti], &ws[i].acc[ti]);
    cert->certified[ti] = orc_acc_bits(&ws[0].acc[ti], NULL);
    const int nb = orc_acc_normwise(&ws[0].acc[ti]);
    if (cert->certified[ti] < cert->certified_bits) cert->certified_bits = cert->certified[ti];
    if (nb < cert->normwise_bits) cert->normwise_bits = nb;
  }
}

static int check_args(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                      const oracle_vjp_dd_config *cfg, gdn_error *e) {
  if (!cfg) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_kda_vjp_dd config: missing (NULL)");
  int rc = orc_config_bits("oracle_kda_vjp_dd", "sample_prec", (long)cfg->sample_prec, e);
  if (!rc) rc = orc_config_nonneg("oracle_kda_vjp_dd", "sample_columns", cfg->sample_columns, "", e);
  if (!rc) rc = orc_config_nonneg("oracle_kda_vjp_dd", "checkpoint", cfg->checkpoint, " (0 = sqrt(T))", e);
  if (!rc) rc = orc_config_placement("oracle_kda_vjp_dd", cfg->head0, cfg->whole_hv, e);
  if (!rc) rc = orc_kda_check(in, gate, NULL, e);
  if (!rc) rc = gdn_cotangents_check(ct, &in->shape, "oracle_kda_vjp_dd", e);
  if (!rc && cfg->whole_hv && cfg->head0 + in->shape.Hv > cfg->whole_hv)
    rc = gdn_error_set(e, GDN_ERR_INPUT,
                       "oracle_kda_vjp_dd: heads %" PRId64 "..%" PRId64 " placed in a run of %" PRId64
                       " value heads (head0 + Hv > whole_hv)",
                       cfg->head0, cfg->head0 + in->shape.Hv - 1, cfg->whole_hv);
  return rc;
}

static int kvdd_run(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                    const oracle_vjp_dd_config *cfg, gdn_grads *out, oracle_vjp_dd_certificate *cert,
                    oracle_tally *tally, gdn_error *e) {
  if (cert) memset(cert, 0, sizeof *cert);
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_kda_vjp_dd: gradients missing (NULL)");
  gdn_grads_clear(out);
  if (!cert) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_kda_vjp_dd: certificate missing (NULL)");
  int rc;
  if ((rc = check_args(in, gate, ct, cfg, e))) return rc;
  const gdn_shape *s = &in->shape;
  if ((rc = gdn_chgrads_alloc(out, s, GDN_DTYPE_F64, e))) return rc;
  const int64_t n_items = s->B * s->Hk, ns = cfg->sample_columns < s->Dv ? cfg->sample_columns : s->Dv;
  const int threads = gdn_threads_get();
  const int nt = n_items < threads ? (int)n_items : threads;
  orc_meter meter; /* every item's reverse steps */
  orc_meter_init(&meter, cfg->progress, n_items * s->T * (s->Hv / s->Hk));
  kdjob jb = {in, gate, ct, out, ns, NULL, cfg->head0, cfg->whole_hv, &meter};
  kdworker *ws = NULL;
  int nw = 0;
  if (!(jb.fail = gdn_malloc((size_t)n_items * sizeof(int64_t), "oracle_kda_vjp_dd item status", e))) goto fail;
  for (int64_t i = 0; i < n_items; i++) jb.fail[i] = -1;
  if (!(ws = gdn_calloc((size_t)nt, sizeof(kdworker), "oracle_kda_vjp_dd workers", e))) goto fail;
  for (; nw < nt; nw++) {
    kdworker_init(&ws[nw]);
    if (kdworker_alloc(&ws[nw], s, cfg, ns, e)) {
      nw++;
      goto fail;
    }
  }
#pragma omp parallel num_threads(nt)
  {
    kdworker *w = &ws[omp_get_thread_num()];
#pragma omp for schedule(dynamic)
    for (int64_t it = 0; it < n_items; it++) run_item(&jb, w, it);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
  }
  if (orc_vjp_report_fail(jb.fail, n_items, s, "oracle_kda_vjp_dd", "binary64's range",
                          "; the MPFR tier has the range for it", e)) {
    for (int64_t it = 0; tally && it < n_items; it++)
      if (jb.fail[it] >= 0) {
        tally->failed_head = it; /* the item reported */
        break;
      }
    goto fail;
  }
  orc_meter_done(&meter);
  fill_cert(cert, ws, nw, s, cfg, ns);
  for (int ti = 0; tally && ns > 0 && ti < GDN_GRADS_N; ti++) orc_tally_put(tally, ti, &ws[0].acc[ti]);
  for (int i = 0; i < nw; i++) kdworker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  return GDN_OK;
fail:
  for (int i = 0; i < nw; i++) kdworker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  gdn_grads_clear(out);
  memset(cert, 0, sizeof *cert);
  return e ? e->code : GDN_ERR_NOMEM;
}

int oracle_kda_vjp_dd(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                      const oracle_vjp_dd_config *cfg, gdn_grads *out, oracle_vjp_dd_certificate *cert, gdn_error *e) {
  return kvdd_run(in, gate, ct, cfg, out, cert, NULL, e);
}

int oracle_kda_vjp_dd_part(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                           const oracle_vjp_dd_config *cfg, gdn_grads *out, oracle_tally *tally, gdn_error *e) {
  int rc = !tally ? gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_kda_vjp_dd: tally missing (NULL)")
                  : oracle_tally_alloc(tally, ORACLE_TALLY_VJP_DD, ORACLE_DD_BITS, -1, e);
  if (rc) {
    if (out) gdn_grads_clear(out);
    return rc;
  }
  oracle_vjp_dd_certificate c;
  if ((rc = kvdd_run(in, gate, ct, cfg, out, &c, tally, e))) orc_tally_drop(tally);
  return rc;
}
