/* oracle_vjp_dd: the VJP's double-word tier and its sampled certificate
 * (oracle_vjp.h): configuration, work items (b, key head), threads, the
 * comparison of the dd item (oracle_vjp_dd_item.c) with oracle_vjp's MPFR
 * workspace on the sampled columns, errors. */
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "oracle_dd_arith.h"
#include "oracle_vjp_internal.h"

enum { VDD_EXACT_PREC = 2200 }; /* holds any double-word value exactly */

void oracle_vjp_dd_config_init(oracle_vjp_dd_config *cfg) {
  cfg->sample_prec = 128;
  cfg->sample_columns = 2;
  cfg->checkpoint = 0;
  cfg->head0 = cfg->whole_hv = 0;
  cfg->progress = NULL;
}

static int validate(const oracle_vjp_dd_config *cfg, gdn_error *e) {
  if (!cfg) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_vjp_dd config: missing (NULL)");
  int rc = orc_config_bits("oracle_vjp_dd", "sample_prec", (long)cfg->sample_prec, e);
  if (!rc) rc = orc_config_nonneg("oracle_vjp_dd", "sample_columns", cfg->sample_columns, "", e);
  if (!rc) rc = orc_config_nonneg("oracle_vjp_dd", "checkpoint", cfg->checkpoint, " (0 = sqrt(T))", e);
  if (!rc) rc = orc_config_placement("oracle_vjp_dd", cfg->head0, cfg->whole_hv, e);
  return rc;
}

typedef struct dworker {
  orc_vdd dd;
  orc_vjp mp;
  orc_vars scr; /* [0] a dd value exactly, [1] scratch */
  orc_acc acc[GDN_GRADS_N];
} dworker;

typedef struct djob {
  const gdn_inputs *in;
  const gdn_cotangents *ct;
  gdn_grads *out;
  int64_t ns;
  int64_t *fail; /* per item: -1, or the token (T: dh0) of the first non-finite value */
  int64_t head0, whole_hv; /* the sample's placement (oracle_vjp_dd_config) */
  orc_meter *meter;        /* reverse-step token-heads done (oracle_vjp_config.progress) */
} djob;

static void dworker_init(dworker *w) {
  orc_vdd_init(&w->dd);
  orc_vjp_init(&w->mp);
  orc_vars_init(&w->scr);
  for (int i = 0; i < GDN_GRADS_N; i++) orc_acc_init(&w->acc[i]);
}

static void dworker_clear(dworker *w) {
  orc_vdd_clear(&w->dd);
  orc_vjp_clear(&w->mp);
  orc_vars_clear(&w->scr);
  for (int i = 0; i < GDN_GRADS_N; i++) orc_acc_clear(&w->acc[i]);
}

static int dworker_alloc(dworker *w, const gdn_shape *s, const oracle_vjp_dd_config *cfg, int64_t ns,
                         gdn_error *e) {
  oracle_vjp_config vc;
  oracle_vjp_config_init(&vc);
  vc.checkpoint = cfg->checkpoint;
  const int64_t K = orc_vjp_checkpoint(&vc, s->T);
  int rc = orc_vdd_alloc(&w->dd, s, K, ns, e);
  if (rc || ns == 0) return rc;
  if ((rc = orc_vjp_alloc(&w->mp, cfg->sample_prec, s, K, ns, e)) ||
      (rc = orc_vars_alloc(&w->scr, 2, cfg->sample_prec + VDD_EXACT_PREC, "oracle_vjp_dd certificate scratch", e)))
    return rc;
  for (int i = 0; i < GDN_GRADS_N; i++)
    if ((rc = orc_acc_alloc(&w->acc[i], ORACLE_DD_BITS, "oracle_vjp_dd certificate", e))) return rc;
  return GDN_OK;
}

/* 0 if the MPFR value is not a number. */
static int cmp(dworker *w, int ti, orc_dd x, mpfr_srcptr r) {
  if (!mpfr_number_p(r)) return 0;
  mpfr_set_d(w->scr.v[0], x.hi, MPFR_RNDN);
  mpfr_add_d(w->scr.v[0], w->scr.v[0], x.lo, MPFR_RNDN); /* exact */
  orc_acc_add(&w->acc[ti], w->scr.v[0], r, w->scr.v[1]);
  return 1;
}

static int token_ok(const djob *jb, const orc_vdd *d, int64_t t) {
  const gdn_shape *s = &jb->in->shape;
  const gdn_grads *g = jb->out;
  const int64_t qk = ((d->b * s->T + t) * s->Hk + d->kh) * s->Dk;
  for (int64_t i = 0; i < s->Dk; i++)
    if (!isfinite(g->dq[qk + i]) || !isfinite(g->dk[qk + i])) return 0;
  for (int64_t jj = 0; jj < d->G; jj++) {
    const int64_t gt = (d->b * s->T + t) * s->Hv + d->kh * d->G + jj;
    if (!isfinite(g->dg[gt]) || !isfinite(g->dbeta[gt])) return 0;
    for (int64_t c = 0; c < s->Dv; c++)
      if (!isfinite(g->dv[gt * s->Dv + c])) return 0;
  }
  return 1;
}

static int sample_token(dworker *w) {
  orc_vdd *d = &w->dd;
  orc_vjp *m = &w->mp;
  for (int64_t i = 0; i < d->Dk; i++)
    if (!cmp(w, GDN_GRAD_DQ, d->sQ[i], m->dQ[i]) || !cmp(w, GDN_GRAD_DK, d->sK[i], m->dK[i])) return 0;
  for (int64_t jj = 0; jj < d->G; jj++) {
    if (!cmp(w, GDN_GRAD_DG, d->sg[jj], m->dg[jj]) || !cmp(w, GDN_GRAD_DBETA, d->sb[jj], m->dbeta[jj]))
      return 0;
    for (int64_t c = 0; c < d->ns; c++)
      if (!cmp(w, GDN_GRAD_DV, d->dv[jj * d->Dv + d->s0 + c], m->dv[jj * d->ns + c])) return 0;
  }
  return 1;
}

static void run_item(const djob *jb, dworker *w, int64_t item) {
  const gdn_inputs *in = jb->in;
  const gdn_shape *s = &in->shape;
  const int64_t b = item / s->Hk, kh = item % s->Hk;
  orc_vdd *d = &w->dd;
  d->s0 = jb->ns ? oracle_dd_sample_start_in(s, jb->ns, b, kh * d->G, jb->head0, jb->whole_hv) : 0;
  int64_t bad;
  if (!orc_vdd_begin(d, in, jb->ct, b, kh, &bad)) {
    jb->fail[item] = bad;
    return;
  }
  if (jb->ns) orc_vjp_begin(&w->mp, in, jb->ct, b, kh, d->s0);
  for (int64_t m = d->nck - 1; m >= 0; m--) {
    orc_vdd_segment(d, in, m);
    if (jb->ns) orc_vjp_segment(&w->mp, in, m);
    const int64_t t1 = (m + 1) * d->K < s->T ? (m + 1) * d->K : s->T;
    for (int64_t t = t1 - 1; t >= m * d->K; t--) {
      orc_vdd_rstep(d, in, jb->ct, jb->out, t);
      int ok = token_ok(jb, d, t);
      if (ok && jb->ns) {
        orc_vjp_rstep(&w->mp, in, jb->ct, t);
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
  for (int64_t jj = 0; jj < d->G; jj++) {
    double *dh0 = jb->out->dh0 + (b * s->Hv + kh * d->G + jj) * s->Dk * s->Dv;
    for (int64_t c = 0; c < s->Dv; c++)
      for (int64_t i = 0; i < s->Dk; i++) {
        const size_t at = (size_t)((jj * s->Dk + i) * s->Dv + c);
        const orc_dd x = {d->S[at], d->S[d->st + at]};
        dh0[i * s->Dv + c] = x.hi;
        int ok = isfinite(x.hi);
        if (ok && jb->ns && c >= d->s0 && c < d->s0 + d->ns)
          ok = cmp(w, GDN_GRAD_DH0, x, orc_vjp_col(w->mp.S, &w->mp, jj, c - d->s0)[i]);
        if (!ok) {
          jb->fail[item] = s->T;
          return;
        }
      }
  }
}

static void fill_cert(oracle_vjp_dd_certificate *cert, dworker *ws, int nw, const gdn_shape *s,
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
    int nb = orc_acc_normwise(&ws[0].acc[ti]);
    if (cert->certified[ti] < cert->certified_bits) cert->certified_bits = cert->certified[ti];
    if (nb < cert->normwise_bits) cert->normwise_bits = nb;
  }
}

int oracle_vjp_dd(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_dd_config *cfg,
                  gdn_grads *out, oracle_vjp_dd_certificate *cert, gdn_error *e) {
  return orc_vjp_dd_run(in, ct, cfg, out, cert, NULL, NULL, e);
}

int orc_vjp_dd_run(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_dd_config *cfg,
                   gdn_grads *out, oracle_vjp_dd_certificate *cert, const unsigned char *sel,
                   oracle_tally *tally, gdn_error *e) {
  if (cert) memset(cert, 0, sizeof *cert);
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_vjp_dd: gradients missing (NULL)");
  gdn_grads_clear(out);
  if (!cert) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_vjp_dd: certificate missing (NULL)");
  int rc;
  if ((rc = validate(cfg, e)) || (rc = orc_check_inputs(in, e)) ||
      (rc = gdn_cotangents_check(ct, &in->shape, "oracle_vjp_dd", e)))
    return rc;
  if (cfg->whole_hv && cfg->head0 + in->shape.Hv > cfg->whole_hv)
    return gdn_error_set(e, GDN_ERR_INPUT, "oracle_vjp_dd: heads %" PRId64 "..%" PRId64 " placed in a run of %" PRId64
                         " value heads (head0 + Hv > whole_hv)", cfg->head0, cfg->head0 + in->shape.Hv - 1,
                         cfg->whole_hv);
  const gdn_shape *s = &in->shape;
  if ((rc = gdn_grads_alloc(out, s, GDN_DTYPE_F64, e))) return rc;
  const int64_t n_items = s->B * s->Hk, ns = cfg->sample_columns < s->Dv ? cfg->sample_columns : s->Dv;
  const int threads = gdn_threads_get();
  const int nt = n_items < threads ? (int)n_items : threads;
  int64_t n_sel = 0;
  for (int64_t i = 0; i < n_items; i++) n_sel += !sel || sel[i];
  orc_meter meter; /* the selected items' reverse steps: the line reaches 100 % when they are done */
  orc_meter_init(&meter, cfg->progress, n_sel * s->T * (s->Hv / s->Hk));
  djob jb = {in, ct, out, ns, NULL, cfg->head0, cfg->whole_hv, &meter};
  dworker *ws = NULL;
  int nw = 0;
  if (!(jb.fail = gdn_malloc((size_t)n_items * sizeof(int64_t), "oracle_vjp_dd item status", e))) goto fail;
  for (int64_t i = 0; i < n_items; i++) jb.fail[i] = -1;
  if (!(ws = gdn_calloc((size_t)nt, sizeof(dworker), "oracle_vjp_dd workers", e))) goto fail;
  for (; nw < nt; nw++) {
    dworker_init(&ws[nw]);
    if (dworker_alloc(&ws[nw], s, cfg, ns, e)) {
      nw++;
      goto fail;
    }
  }
#pragma omp parallel num_threads(nt)
  {
    dworker *w = &ws[omp_get_thread_num()];
#pragma omp for schedule(dynamic)
    for (int64_t it = 0; it < n_items; it++)
      if (!sel || sel[it]) run_item(&jb, w, it);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
  }
  if (orc_vjp_report_fail(jb.fail, n_items, &in->shape, "oracle_vjp_dd", "binary64's range",
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
  for (int i = 0; i < nw; i++) dworker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  return GDN_OK;
fail:
  for (int i = 0; i < nw; i++) dworker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  gdn_grads_clear(out);
  memset(cert, 0, sizeof *cert);
  return e ? e->code : GDN_ERR_NOMEM;
}
