/* oracle_kda_run_dd: Kimi Delta Attention's recurrence in double-word
 * arithmetic, with a sampled MPFR certificate (oracle_kda.h).
 *
 * Per (b, j) item, every column: the state in double-word (row i of the
 * Dk x Dv state at hh + i Dv, hl + i Dv: hi and lo words), the KDA oracle's steps in its order,
 * each operation the double-word one of oracle_dd_arith.h:
 *   h_ic = h_ic * a_i (dd*dd); kv_c = sum_i h_ic K_i (dd*dd, dd+dd, i
 *   ascending from i = 0); d = (-kv) + v (dd+d); delta = d * beta (dd*d);
 *   h_ic = h_ic + K_i delta (dd*dd, dd+dd); o_c = sum_i h_ic Q_i.
 * K, Q and a = exp(g) are the MPFR token form's preparation at
 * ORACLE_DD_PREP_PREC = 128 bits (orc_kda_step on a workspace of no
 * columns, or the sample's own when it runs at 128 bits: the same values),
 * rounded to double-word (orc_dd_of_mpfr: relative 2^-106).
 * Outputs are the hi words (the double-word values rounded to binary64).
 *
 * Certificate: sample_columns contiguous columns of each (b, j), from
 * oracle_dd_sample_start_in (placed by cfg->head0, whole_hv: a group's
 * columns are the whole run's), run in lockstep by the MPFR KDA token form at
 * sample_prec bits; each sampled element's double-word value (rounded to
 * 128 bits: 2^-128 relative) is compared with the MPFR value by the rule of
 * oracle_run_certified, capped at ORACLE_DD_BITS.  The GDN dd tier's
 * guaranteed running bound is not computed here: guaranteed_* are 0 and
 * bound_violations -1 (not checked).  Threads over (b, j) items; results
 * are bit-identical for any thread count.  The part runner's tally holds
 * the sample's two accumulators (o, ht) as a GDN dd tally's 0 and 1, its
 * bound's 2 and 3 empty, v[0] -1 (oracle_part.h). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "oracle_dd_arith.h"
#include "oracle_kda.h"
#include "oracle_kda_internal.h"

typedef struct kdd_worker {
  orc_tok prep, smp;   /* the preparation at 128 bits (no columns); the sample */
  orc_vars a_prep, a_smp, x; /* Dk decays each; x: 3 numbers at 128 bits (value, scratch, |x - r|) */
  orc_acc acc[2];
  double *buf;                         /* one allocation: everything below */
  double *hh, *hl, *xh, *xl, *oh, *ol; /* the state's rows (Dk x Dv), kv then delta, o (Dv): hi, lo words */
  orc_dd *K, *Q, *a;                   /* Dk each */
} kdd_worker;

static void kdd_init(kdd_worker *w) {
  orc_tok_init(&w->prep), orc_tok_init(&w->smp);
  orc_vars_init(&w->a_prep), orc_vars_init(&w->a_smp), orc_vars_init(&w->x);
  orc_acc_init(&w->acc[0]), orc_acc_init(&w->acc[1]);
  w->buf = NULL;
}

static void kdd_clear(kdd_worker *w) {
  orc_tok_clear(&w->prep), orc_tok_clear(&w->smp);
  orc_vars_clear(&w->a_prep), orc_vars_clear(&w->a_smp), orc_vars_clear(&w->x);
  orc_acc_clear(&w->acc[0]), orc_acc_clear(&w->acc[1]);
  gdn_free(w->buf);
  kdd_init(w);
}

static int kdd_alloc(kdd_worker *w, const gdn_shape *s, const oracle_dd_config *cfg, int64_t ns, gdn_error *e) {
  int rc;
  const size_t Dk = (size_t)s->Dk, Dv = (size_t)s->Dv;
  if ((rc = orc_tok_alloc(&w->prep, ORACLE_DD_PREP_PREC, s->Dk, 1, e)) ||
      (rc = orc_vars_alloc(&w->a_prep, Dk, ORACLE_DD_PREP_PREC, "KDA dd decays", e)) ||
      (rc = orc_vars_alloc(&w->x, 3, ORACLE_DD_PREP_PREC > cfg->sample_prec ? ORACLE_DD_PREP_PREC : cfg->sample_prec,
                           "KDA dd certificate scratch", e)) ||
      (rc = orc_acc_alloc(&w->acc[0], ORACLE_DD_BITS, "KDA dd certificate of o", e)) ||
      (rc = orc_acc_alloc(&w->acc[1], ORACLE_DD_BITS, "KDA dd certificate of ht", e)))
    return rc;
  if (ns > 0 && ((rc = orc_tok_alloc(&w->smp, cfg->sample_prec, s->Dk, ns, e)) ||
                 (rc = orc_vars_alloc(&w->a_smp, Dk, cfg->sample_prec, "KDA dd sample decays", e))))
    return rc;
  w->buf = gdn_malloc((2 * Dk * Dv + 4 * Dv + 6 * Dk) * sizeof(double), "KDA dd state", e);
  if (!w->buf) return e ? e->code : GDN_ERR_NOMEM;
  w->hh = w->buf, w->hl = w->hh + Dk * Dv, w->xh = w->hl + Dk * Dv, w->xl = w->xh + Dv, w->oh = w->xl + Dv,
  w->ol = w->oh + Dv;
  w->K = (orc_dd *)(w->ol + Dv), w->Q = w->K + Dk, w->a = w->Q + Dk;
  return GDN_OK;
}

/* Compares the double-word value v with the sample's MPFR value r. */
static void kdd_cmp(kdd_worker *w, int ti, orc_dd v, mpfr_srcptr r) {
  mpfr_ptr x = w->x.v[0], d = w->x.v[2];
  mpfr_set_d(x, v.hi, MPFR_RNDN);
  mpfr_add_d(x, x, v.lo, MPFR_RNDN);
  orc_acc_add(&w->acc[ti], x, r, d);
}

typedef struct kdd_job {
  const gdn_inputs *in;
  const gdn_chgate *gate;
  gdn_outputs *out;
  int64_t ns;    /* sampled columns per (b, j) */
  mpfr_prec_t sample_prec;
  int64_t *fail; /* per item: -1 fine, t < T: non-finite o_t, T: non-finite ht */
  int64_t head0, whole_hv; /* the sample's placement (oracle_dd_config) */
  orc_meter *meter;        /* token-columns done, a sampled column ORACLE_PROGRESS_MPFR_WEIGHT more */
} kdd_job;

/* One item's token-columns a token: Dv in double-word, the ns sampled
 * ones also in MPFR (oracle.h: an MPFR column weighs ORACLE_PROGRESS_MPFR_WEIGHT). */
static int64_t kdd_weight(const gdn_shape *s, int64_t ns) { return s->Dv + ns * ORACLE_PROGRESS_MPFR_WEIGHT; }

/* One token's double-word steps on every column (the file's header), row
 * by row; the loops over columns are `omp simd` over independent columns,
 * each column's operations in the same order whatever the vector width. */
static void kdd_rows(kdd_worker *w, const float *v, double beta, int64_t Dk, int64_t Dv) {
  double *restrict xh = w->xh, *restrict xl = w->xl, *restrict oh = w->oh, *restrict ol = w->ol;
  for (int64_t i = 0; i < Dk; i++) {
    double *restrict rh = w->hh + i * Dv, *restrict rl = w->hl + i * Dv;
    const orc_dd ai = w->a[i], Ki = w->K[i];
#pragma omp simd
    for (int64_t c = 0; c < Dv; c++) {
      const orc_dd h = orc_dd_mul((orc_dd){rh[c], rl[c]}, ai);
      rh[c] = h.hi, rl[c] = h.lo;
      const orc_dd p = orc_dd_mul(h, Ki);
      const orc_dd k = i ? orc_dd_add((orc_dd){xh[c], xl[c]}, p) : p;
      xh[c] = k.hi, xl[c] = k.lo;
    }
  }
#pragma omp simd
  for (int64_t c = 0; c < Dv; c++) { /* kv becomes delta */
    const orc_dd d = orc_dd_mul_d(orc_dd_add_d(orc_dd_neg((orc_dd){xh[c], xl[c]}), (double)v[c]), beta);
    xh[c] = d.hi, xl[c] = d.lo;
  }
  for (int64_t i = 0; i < Dk; i++) {
    double *restrict rh = w->hh + i * Dv, *restrict rl = w->hl + i * Dv;
    const orc_dd Ki = w->K[i], Qi = w->Q[i];
#pragma omp simd
    for (int64_t c = 0; c < Dv; c++) {
      const orc_dd h = orc_dd_add((orc_dd){rh[c], rl[c]}, orc_dd_mul(Ki, (orc_dd){xh[c], xl[c]}));
      rh[c] = h.hi, rl[c] = h.lo;
      const orc_dd p = orc_dd_mul(h, Qi);
      const orc_dd o = i ? orc_dd_add((orc_dd){oh[c], ol[c]}, p) : p;
      oh[c] = o.hi, ol[c] = o.lo;
    }
  }
}

static void kdd_item(const kdd_job *jb, kdd_worker *w, int64_t item) {
  const gdn_inputs *in = jb->in;
  const gdn_shape *s = &in->shape;
  const int64_t b = item / s->Hv, j = item % s->Hv, Dk = s->Dk, Dv = s->Dv, ns = jb->ns;
  const int64_t c0 = ns > 0 ? oracle_dd_sample_start_in(s, ns, b, j, jb->head0, jb->whole_hv) : 0;
  mpfr_ptr tmp = w->x.v[1];
  orc_tok_begin(&w->prep, in, b, j, 0, 0);
  if (ns > 0) orc_tok_begin(&w->smp, in, b, j, c0, ns);
  const float *h0 = gdn_inputs_h0(in, b, j);
  for (int64_t x = 0; x < Dk * Dv; x++) w->hh[x] = h0 ? (double)h0[x] : 0.0, w->hl[x] = 0.0;
  for (int64_t t = 0; t < s->T; t++) {
    /* K, Q, a at 128 bits: the sample's own when it runs at 128 bits (the
     * same operations on the same inputs: the same values), else the
     * preparation workspace's */
    const int shared = ns > 0 && jb->sample_prec == ORACLE_DD_PREP_PREC;
    if (ns > 0) orc_kda_step(&w->smp, w->a_smp.v, in, jb->gate, t);
    if (!shared) orc_kda_step(&w->prep, w->a_prep.v, in, jb->gate, t);
    const orc_tok *pw = shared ? &w->smp : &w->prep;
    mpfr_t *pa = shared ? w->a_smp.v : w->a_prep.v;
    for (int64_t i = 0; i < Dk; i++) {
      orc_dd_of_mpfr(pw->K[i], tmp, &w->K[i].hi, &w->K[i].lo);
      orc_dd_of_mpfr(pw->Q[i], tmp, &w->Q[i].hi, &w->Q[i].lo);
      orc_dd_of_mpfr(pa[i], tmp, &w->a[i].hi, &w->a[i].lo);
    }
    kdd_rows(w, gdn_inputs_v(in, b, t, j), gdn_inputs_beta(in, b, t, j), Dk, Dv);
    double *o = gdn_outputs_o(jb->out, b, t, j);
    for (int64_t c = 0; c < Dv; c++) {
      if (!isfinite(w->oh[c]) || !isfinite(w->ol[c])) {
        jb->fail[item] = t;
        return;
      }
      o[c] = w->oh[c];
    }
    for (int64_t c = 0; c < ns; c++) kdd_cmp(w, 0, (orc_dd){w->oh[c0 + c], w->ol[c0 + c]}, w->smp.o[c]);
    if ((t + 1) % ORC_METER_TOKENS == 0) orc_meter_add(jb->meter, ORC_METER_TOKENS * kdd_weight(s, ns));
  }
  orc_meter_add(jb->meter, s->T % ORC_METER_TOKENS * kdd_weight(s, ns));
  double *ht = gdn_outputs_ht(jb->out, b, j);
  for (int64_t x = 0; x < Dk * Dv; x++) {
    if (!isfinite(w->hh[x]) || !isfinite(w->hl[x])) {
      jb->fail[item] = s->T;
      return;
    }
    ht[x] = w->hh[x];
  }
  for (int64_t i = 0; i < Dk; i++)
    for (int64_t c = 0; c < ns; c++)
      kdd_cmp(w, 1, (orc_dd){w->hh[i * Dv + c0 + c], w->hl[i * Dv + c0 + c]}, orc_tok_h(&w->smp, i, c));
}

static void kdd_cert(oracle_dd_certificate *cert, const oracle_dd_config *cfg, const gdn_shape *s, int64_t ns,
                     kdd_worker *ws, int nw) {
  for (int i = 1; i < nw; i++)
    for (int ti = 0; ti < 2; ti++) orc_acc_merge(&ws[0].acc[ti], &ws[i].acc[ti]);
  cert->precision_bits = ORACLE_DD_BITS;
  cert->check_bits = (int)cfg->sample_prec;
  cert->sample_columns = ns;
  cert->sampled_columns = s->B * s->Hv * ns;
  cert->total_columns = s->B * s->Hv * s->Dv;
  cert->bound_violations = -1;
  if (ns == 0) return;
  cert->certified_o = orc_acc_bits(&ws[0].acc[0], &cert->floor_o);
  cert->certified_ht = orc_acc_bits(&ws[0].acc[1], &cert->floor_ht);
  cert->certified_bits = cert->certified_o < cert->certified_ht ? cert->certified_o : cert->certified_ht;
  const int n0 = orc_acc_normwise(&ws[0].acc[0]), n1 = orc_acc_normwise(&ws[0].acc[1]);
  cert->normwise_bits = n0 < n1 ? n0 : n1;
}

static int kdd_run(const gdn_inputs *in, const gdn_chgate *gate, const oracle_dd_config *cfg, gdn_outputs *out,
                   oracle_dd_certificate *cert, oracle_tally *tally, gdn_error *e) {
  if (cert) memset(cert, 0, sizeof *cert);
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle (kda, dd): outputs missing (NULL)");
  gdn_outputs_clear(out);
  if (!cert) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle (kda, dd): certificate missing (NULL)");
  int rc;
  if ((rc = oracle_dd_config_validate(cfg, e)) || (rc = orc_kda_check(in, gate, NULL, e))) return rc;
  const gdn_shape *s = &in->shape;
  if (cfg->whole_hv && cfg->head0 + s->Hv > cfg->whole_hv)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "oracle (kda, dd): heads %lld..%lld placed in a run of %lld value heads (head0 + Hv > "
                         "whole_hv)",
                         (long long)cfg->head0, (long long)(cfg->head0 + s->Hv - 1), (long long)cfg->whole_hv);
  const int64_t ns = cfg->sample_columns < s->Dv ? cfg->sample_columns : s->Dv, n_items = s->B * s->Hv;
  if ((rc = gdn_outputs_alloc(out, s, GDN_DTYPE_F64, e))) return rc;
  const int threads = gdn_threads_get(), nt = n_items < threads ? (int)n_items : threads;
  orc_meter meter; /* every head's token-columns */
  orc_meter_init(&meter, cfg->progress, n_items * s->T * kdd_weight(s, ns));
  kdd_job jb = {in, gate, out, ns, cfg->sample_prec, NULL, cfg->head0, cfg->whole_hv, &meter};
  kdd_worker *ws = NULL;
  int nw = 0;
  jb.fail = gdn_malloc((size_t)n_items * sizeof(int64_t), "KDA dd item status", e);
  if (!jb.fail) goto fail;
  for (int64_t i = 0; i < n_items; i++) jb.fail[i] = -1;
  ws = gdn_calloc((size_t)nt, sizeof(kdd_worker), "KDA dd workers", e);
  if (!ws) goto fail;
  for (; nw < nt; nw++) {
    kdd_init(&ws[nw]);
    if (kdd_alloc(&ws[nw], s, cfg, ns, e)) {
      nw++;
      goto fail;
    }
  }
#pragma omp parallel num_threads(nt)
  {
    kdd_worker *w = &ws[omp_get_thread_num()];
#pragma omp for schedule(dynamic)
    for (int64_t it = 0; it < n_items; it++) kdd_item(&jb, w, it);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
  }
  for (int64_t it = 0; it < n_items; it++)
    if (jb.fail[it] >= 0) {
      if (tally) tally->failed_head = it; /* item b Hv + j: the head's index */
      gdn_error_set(e, GDN_ERR_INPUT,
                    "oracle (kda, dd): the recurrence left binary64's range at b=%lld, value head %lld, %s%lld "
                    "(use the MPFR tier)",
                    (long long)(it / s->Hv), (long long)(it % s->Hv), jb.fail[it] < s->T ? "token t=" : "final state, T=",
                    (long long)jb.fail[it]);
      goto fail;
    }
  orc_meter_done(&meter);
  kdd_cert(cert, cfg, s, ns, ws, nw);
  for (int ti = 0; tally && ns > 0 && ti < 2; ti++) orc_tally_put(tally, ti, &ws[0].acc[ti]);
  for (int i = 0; i < nw; i++) kdd_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  return GDN_OK;

fail:
  for (int i = 0; i < nw; i++) kdd_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  gdn_outputs_clear(out);
  memset(cert, 0, sizeof *cert);
  return e ? e->code : GDN_ERR_NOMEM;
}

int oracle_kda_run_dd(const gdn_inputs *in, const gdn_chgate *gate, const oracle_dd_config *cfg, gdn_outputs *out,
                      oracle_dd_certificate *cert, gdn_error *e) {
  return kdd_run(in, gate, cfg, out, cert, NULL, e);
}

int oracle_kda_run_dd_part(const gdn_inputs *in, const gdn_chgate *gate, const oracle_dd_config *cfg,
                           gdn_outputs *out, oracle_tally *tally, gdn_error *e) {
  int rc = !tally ? gdn_error_set(e, GDN_ERR_INTERNAL, "oracle (kda, dd): tally missing (NULL)")
                  : oracle_tally_alloc(tally, ORACLE_TALLY_DD, ORACLE_DD_BITS, -1, e);
  if (rc) {
    if (out) gdn_outputs_clear(out);
    return rc;
  }
  oracle_dd_certificate c;
  if ((rc = kdd_run(in, gate, cfg, out, &c, tally, e))) orc_tally_drop(tally);
  return rc;
}

int oracle_kda_tally_dd_certificate(const oracle_tally *t, const gdn_shape *s, const oracle_dd_config *cfg,
                                    oracle_dd_certificate *cert, gdn_error *e) {
  int rc = oracle_tally_dd_certificate(t, s, cfg, cert, e);
  if (rc) return rc;
  cert->guaranteed_o = cert->guaranteed_ht = cert->guaranteed_bits = cert->guaranteed_normwise = 0;
  cert->bound_violations = -1;
  return GDN_OK;
}
