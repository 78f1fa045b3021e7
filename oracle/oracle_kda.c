/* oracle_kda_run: validation, work items, threads and the certificate of the
 * KDA oracle (oracle_kda.h).  The same structure as oracle_run's token form:
 * items write disjoint slices of o and ht, each thread owns its workspaces
 * (allocated before the parallel region, in thread order), the certificate
 * is a maximum over elements, so nothing depends on the thread count. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "oracle_kda.h"
#include "oracle_kda_internal.h"

typedef struct kda_worker {
  orc_tok tok[2];  /* [0] at p, [1] at P (certified only) */
  orc_vars a[2];   /* Dk decays at each precision */
  orc_vars scratch; /* one number at P: |x - r| */
  orc_acc acc[2];  /* o, ht */
} kda_worker;

typedef struct kda_job {
  const gdn_inputs *in;
  const gdn_chgate *gate;
  gdn_outputs *out;
  int certified;
  int64_t nb, nblk;
  int64_t *fail; /* per item: -1 fine, t < T: non-finite o_t, T: non-finite ht */
  orc_meter *meter; /* token-columns done (the check run at P is not counted apart) */
} kda_job;

static void worker_init(kda_worker *w) {
  for (int i = 0; i < 2; i++) {
    orc_tok_init(&w->tok[i]);
    orc_vars_init(&w->a[i]);
    orc_acc_init(&w->acc[i]);
  }
  orc_vars_init(&w->scratch);
}

static void worker_clear(kda_worker *w) {
  for (int i = 0; i < 2; i++) {
    orc_tok_clear(&w->tok[i]);
    orc_vars_clear(&w->a[i]);
    orc_acc_clear(&w->acc[i]);
  }
  orc_vars_clear(&w->scratch);
}

static int worker_alloc(kda_worker *w, const gdn_shape *s, const oracle_config *cfg, mpfr_prec_t P,
                        int certified, int64_t nb, gdn_error *e) {
  int rc;
  mpfr_prec_t prec[2] = {cfg->prec, P};
  for (int i = 0; i < (certified ? 2 : 1); i++)
    if ((rc = orc_tok_alloc(&w->tok[i], prec[i], s->Dk, nb, e)) ||
        (rc = orc_vars_alloc(&w->a[i], (size_t)s->Dk, prec[i], "KDA oracle decays", e)))
      return rc;
  if (certified &&
      ((rc = orc_vars_alloc(&w->scratch, 1, P, "KDA oracle certificate scratch", e)) ||
       (rc = orc_acc_alloc(&w->acc[0], (int)cfg->prec, "KDA oracle certificate of o", e)) ||
       (rc = orc_acc_alloc(&w->acc[1], (int)cfg->prec, "KDA oracle certificate of ht", e))))
    return rc;
  return GDN_OK;
}

static int emit(const kda_job *jb, kda_worker *w, int ti, mpfr_srcptr x, mpfr_srcptr xr, double *dst) {
  if (!mpfr_number_p(x)) return 0;
  *dst = mpfr_get_d(x, MPFR_RNDN);
  if (jb->certified) {
    if (!mpfr_number_p(xr)) return 0;
    orc_acc_add(&w->acc[ti], x, xr, w->scratch.v[0]);
  }
  return 1;
}

static void run_item(const kda_job *jb, kda_worker *w, int64_t item) {
  const gdn_inputs *in = jb->in;
  const gdn_shape *s = &in->shape;
  const int64_t b = item / (s->Hv * jb->nblk), j = (item / jb->nblk) % s->Hv;
  const int64_t c0 = (item % jb->nblk) * jb->nb, nc = s->Dv - c0 < jb->nb ? s->Dv - c0 : jb->nb;
  const int np = jb->certified ? 2 : 1;
  for (int i = 0; i < np; i++) orc_tok_begin(&w->tok[i], in, b, j, c0, nc);
  orc_tok *wp = &w->tok[0], *wr = &w->tok[np - 1];
  for (int64_t t = 0; t < s->T; t++) {
    for (int i = 0; i < np; i++) orc_kda_step(&w->tok[i], w->a[i].v, in, jb->gate, t);
    double *o = gdn_outputs_o(jb->out, b, t, j) + c0;
    for (int64_t c = 0; c < nc; c++)
      if (!emit(jb, w, 0, wp->o[c], wr->o[c], &o[c])) {
        jb->fail[item] = t;
        return;
      }
    if ((t + 1) % ORC_METER_TOKENS == 0) orc_meter_add(jb->meter, ORC_METER_TOKENS * nc);
  }
  orc_meter_add(jb->meter, s->T % ORC_METER_TOKENS * nc);
  double *ht = gdn_outputs_ht(jb->out, b, j);
  for (int64_t i = 0; i < s->Dk; i++)
    for (int64_t c = 0; c < nc; c++)
      if (!emit(jb, w, 1, orc_tok_h(wp, i, c), orc_tok_h(wr, i, c), &ht[i * s->Dv + c0 + c])) {
        jb->fail[item] = s->T;
        return;
      }
}

int orc_kda_check(const gdn_inputs *in, const gdn_chgate *gate, const oracle_config *cfg, gdn_error *e) {
  int rc = orc_check_inputs(in, e);
  if (rc) return rc;
  if (cfg && cfg->form != ORACLE_FORM_TOKEN)
    return gdn_error_set(e, GDN_ERR_INPUT, "oracle (kda): only the token form is implemented (form = %d)",
                         (int)cfg->form);
  if (in->seg)
    return gdn_error_set(e, GDN_ERR_INPUT, "oracle (kda): packed documents (segment ids) are not supported");
  const gdn_shape *s = &in->shape, *gs = gate ? &gate->shape : NULL;
  if (!gate || !gate->g)
    return gdn_error_set(e, GDN_ERR_INPUT, "oracle (kda): the per-channel gate g is missing (NULL)");
  if (gs->B != s->B || gs->T != s->T || gs->Hv != s->Hv || gs->Dk != s->Dk)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "oracle (kda): gate g has shape (%lld, %lld, %lld, %lld), the inputs need (%lld, %lld, "
                         "%lld, %lld)",
                         (long long)gs->B, (long long)gs->T, (long long)gs->Hv, (long long)gs->Dk, (long long)s->B,
                         (long long)s->T, (long long)s->Hv, (long long)s->Dk);
  const size_t n = gdn_chgate_numel(s);
  for (size_t i = 0; i < n; i++)
    if (!isfinite(gate->g[i])) {
      const int64_t d = (int64_t)(i % (size_t)s->Dk), r = (int64_t)(i / (size_t)s->Dk);
      return gdn_error_set(e, GDN_ERR_INPUT, "oracle (kda): gate g[%lld, %lld, %lld, %lld] = %g is not finite",
                           (long long)(r / (s->T * s->Hv)), (long long)(r / s->Hv % s->T),
                           (long long)(r % s->Hv), (long long)d, (double)gate->g[i]);
    }
  return GDN_OK;
}

static void cert_fill(oracle_certificate *cert, const oracle_config *cfg, mpfr_prec_t P, kda_worker *ws, int nw,
                      oracle_tally *tally) {
  for (int i = 1; i < nw; i++)
    for (int ti = 0; ti < 2; ti++) orc_acc_merge(&ws[0].acc[ti], &ws[i].acc[ti]);
  for (int ti = 0; tally && ti < 2; ti++) orc_tally_put(tally, ti, &ws[0].acc[ti]);
  cert->precision_bits = (int)cfg->prec;
  cert->check_bits = (int)P;
  cert->certified_o = orc_acc_bits(&ws[0].acc[0], &cert->floor_o);
  cert->certified_ht = orc_acc_bits(&ws[0].acc[1], &cert->floor_ht);
  cert->certified_bits = cert->certified_o < cert->certified_ht ? cert->certified_o : cert->certified_ht;
}

static int kda_run(const gdn_inputs *in, const gdn_chgate *gate, const oracle_config *cfg, gdn_outputs *out,
                   oracle_certificate *cert, oracle_tally *tally, gdn_error *e) {
  if (cert) memset(cert, 0, sizeof *cert);
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle (kda): outputs missing (NULL)");
  gdn_outputs_clear(out);
  int rc;
  if ((rc = oracle_config_validate(cfg, cert != NULL, e)) || (rc = orc_kda_check(in, gate, cfg, e))) return rc;
  const gdn_shape *s = &in->shape;
  const mpfr_prec_t P = cfg->check_prec ? cfg->check_prec : cfg->prec + 64;
  if ((rc = gdn_outputs_alloc(out, s, GDN_DTYPE_F64, e))) return rc;
  const int threads = gdn_threads_get();
  orc_meter meter; /* every head's token-columns */
  orc_meter_init(&meter, cfg->progress, s->B * s->Hv * s->T * s->Dv);
  kda_job jb = {in, gate, out, cert != NULL, 0, 1, NULL, &meter};
  /* columns per item: as the GDN token form (results never depend on it) */
  jb.nb = cfg->column_block > 0 ? cfg->column_block : 64;
  if (jb.nb > s->Dv) jb.nb = s->Dv;
  while (cfg->column_block <= 0 && jb.nb > 8 && s->B * s->Hv * ((s->Dv + jb.nb - 1) / jb.nb) < 2 * (int64_t)threads)
    jb.nb = (jb.nb + 1) / 2;
  jb.nblk = (s->Dv + jb.nb - 1) / jb.nb;
  const int64_t n_items = s->B * s->Hv * jb.nblk;
  const int nt = n_items < threads ? (int)n_items : threads;
  kda_worker *ws = NULL;
  int nw = 0;
  jb.fail = gdn_malloc((size_t)n_items * sizeof(int64_t), "KDA oracle item status", e);
  if (!jb.fail) goto fail;
  for (int64_t i = 0; i < n_items; i++) jb.fail[i] = -1;
  ws = gdn_calloc((size_t)nt, sizeof(kda_worker), "KDA oracle workers", e);
  if (!ws) goto fail;
  for (; nw < nt; nw++) {
    worker_init(&ws[nw]);
    if (worker_alloc(&ws[nw], s, cfg, P, cert != NULL, jb.nb, e)) {
      nw++;
      goto fail;
    }
  }
#pragma omp parallel num_threads(nt)
  {
    kda_worker *w = &ws[omp_get_thread_num()];
#pragma omp for schedule(dynamic)
    for (int64_t it = 0; it < n_items; it++) run_item(&jb, w, it);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
  }
  for (int64_t it = 0; it < n_items; it++)
    if (jb.fail[it] >= 0) {
      const int64_t blk = it / jb.nblk;
      gdn_error_set(e, GDN_ERR_INPUT,
                    "oracle (kda): the recurrence left MPFR's exponent range at b=%lld, value head %lld, %s%lld: "
                    "|g| is too large",
                    (long long)(blk / s->Hv), (long long)(blk % s->Hv), jb.fail[it] < s->T ? "token t=" : "final state, T=",
                    (long long)jb.fail[it]);
      goto fail;
    }
  orc_meter_done(&meter);
  if (cert) cert_fill(cert, cfg, P, ws, nw, tally);
  for (int i = 0; i < nw; i++) worker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  return GDN_OK;

fail:
  for (int i = 0; i < nw; i++) worker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  gdn_outputs_clear(out);
  if (cert) memset(cert, 0, sizeof *cert);
  return e ? e->code : GDN_ERR_NOMEM;
}

int oracle_kda_run(const gdn_inputs *in, const gdn_chgate *gate, const oracle_config *cfg, gdn_outputs *out,
                   oracle_certificate *cert, gdn_error *e) {
  return kda_run(in, gate, cfg, out, cert, NULL, e);
}

int oracle_kda_run_part(const gdn_inputs *in, const gdn_chgate *gate, const oracle_config *cfg, gdn_outputs *out,
                        oracle_tally *tally, gdn_error *e) {
  if (!tally) {
    if (out) gdn_outputs_clear(out);
    return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle (kda): tally missing (NULL)");
  }
  int rc = cfg ? oracle_config_validate(cfg, 1, e) : gdn_error_set(e, GDN_ERR_INTERNAL, "oracle (kda): config missing");
  if (!rc) rc = oracle_tally_alloc(tally, ORACLE_TALLY_MPFR, (int)cfg->prec, -1, e);
  if (rc) {
    if (out) gdn_outputs_clear(out);
    return rc;
  }
  oracle_certificate c;
  if ((rc = kda_run(in, gate, cfg, out, &c, tally, e))) oracle_tally_clear(tally);
  return rc;
}
