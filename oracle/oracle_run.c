/* oracle_run and oracle_run_certified: validation, work items, threads.
 *
 * Work items are independent (they write disjoint slices of o and ht), each
 * thread owns its workspaces, and the certificate is a maximum over
 * elements (exact in any order), so nothing depends on the thread count or
 * on which thread ran which item.  Workspaces are allocated before the
 * parallel region, in thread order, so the n-th allocation is the same
 * allocation on every run with the same thread count (fault injection).
 */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "oracle_internal.h"

typedef struct worker {
  orc_tok tok[2]; /* [0] at p, [1] at P (certified only) */
  orc_chk chk[2];
  orc_vars scratch; /* one number at P: |x - r| */
  orc_acc acc[2];   /* o, ht */
} worker;

typedef struct job {
  const gdn_inputs *in;
  gdn_outputs *out;
  int certified;
  int64_t nb, nblk; /* token form: columns per item, blocks per head */
  int64_t chunk;
  int64_t *fail;    /* per item: -1 fine, t < T: non-finite o_t, T: non-finite ht */
  const unsigned char *heads; /* oracle_part.h: the heads to run (NULL: all) */
  orc_meter *meter; /* token-columns done (the check run at P is not counted apart) */
} job;

static void worker_init(worker *w) {
  for (int i = 0; i < 2; i++) {
    orc_tok_init(&w->tok[i]);
    orc_chk_init(&w->chk[i]);
    orc_acc_init(&w->acc[i]);
  }
  orc_vars_init(&w->scratch);
}

static void worker_clear(worker *w) {
  for (int i = 0; i < 2; i++) {
    orc_tok_clear(&w->tok[i]);
    orc_chk_clear(&w->chk[i]);
    orc_acc_clear(&w->acc[i]);
  }
  orc_vars_clear(&w->scratch);
}

static int worker_alloc(worker *w, const gdn_shape *s, const oracle_config *cfg, mpfr_prec_t P,
                        int certified, int64_t nb, gdn_error *e) {
  int rc, np = certified ? 2 : 1;
  mpfr_prec_t prec[2] = {cfg->prec, P};
  int64_t C = cfg->chunk < s->T ? cfg->chunk : s->T;
  for (int i = 0; i < np; i++) {
    if (cfg->form == ORACLE_FORM_TOKEN)
      rc = orc_tok_alloc(&w->tok[i], prec[i], s->Dk, nb, e);
    else
      rc = orc_chk_alloc(&w->chk[i], prec[i], s->Dk, s->Dv, C, e);
    if (rc) return rc;
  }
  if (certified) {
    if ((rc = orc_vars_alloc(&w->scratch, 1, P, "oracle certificate scratch", e)) ||
        (rc = orc_acc_alloc(&w->acc[0], (int)cfg->prec, "oracle certificate of o", e)) ||
        (rc = orc_acc_alloc(&w->acc[1], (int)cfg->prec, "oracle certificate of ht", e)))
      return rc;
  }
  return GDN_OK;
}

/* Rounds x to binary64 into *dst (and adds it to the certificate against
 * xr); 0 if x or xr is not a number. */
static int emit(const job *jb, worker *w, int ti, mpfr_srcptr x, mpfr_srcptr xr, double *dst) {
  if (!mpfr_number_p(x)) return 0;
  *dst = mpfr_get_d(x, MPFR_RNDN);
  if (jb->certified) {
    if (!mpfr_number_p(xr)) return 0;
    orc_acc_add(&w->acc[ti], x, xr, w->scratch.v[0]);
  }
  return 1;
}

static void run_token_item(const job *jb, worker *w, int64_t item) {
  const gdn_inputs *in = jb->in;
  const gdn_shape *s = &in->shape;
  int64_t b = item / (s->Hv * jb->nblk), j = (item / jb->nblk) % s->Hv;
  int64_t c0 = (item % jb->nblk) * jb->nb, nc = s->Dv - c0 < jb->nb ? s->Dv - c0 : jb->nb;
  orc_tok *wp = &w->tok[0], *wr = jb->certified ? &w->tok[1] : &w->tok[0];
  orc_tok_begin(wp, in, b, j, c0, nc);
  if (jb->certified) orc_tok_begin(wr, in, b, j, c0, nc);
  for (int64_t t = 0; t < s->T; t++) {
    orc_tok_step(wp, in, t);
    if (jb->certified) orc_tok_step(wr, in, t);
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

static void run_chunked_item(const job *jb, worker *w, int64_t item) {
  const gdn_inputs *in = jb->in;
  const gdn_shape *s = &in->shape;
  int64_t b = item / s->Hv, j = item % s->Hv, Dv = s->Dv;
  orc_chk *wp = &w->chk[0], *wr = jb->certified ? &w->chk[1] : &w->chk[0];
  orc_chk_begin(wp, in, b, j);
  if (jb->certified) orc_chk_begin(wr, in, b, j);
  for (int64_t t0 = 0, n; t0 < s->T; t0 += n) {
    n = s->T - t0 < jb->chunk ? s->T - t0 : jb->chunk;
    orc_chk_chunk(wp, in, t0, n);
    if (jb->certified) orc_chk_chunk(wr, in, t0, n);
    orc_meter_add(jb->meter, n * Dv);
    for (int64_t i = 0; i < n; i++) {
      double *o = gdn_outputs_o(jb->out, b, t0 + i, j);
      for (int64_t c = 0; c < Dv; c++)
        if (!emit(jb, w, 0, wp->O[i * Dv + c], wr->O[i * Dv + c], &o[c])) {
          jb->fail[item] = t0 + i;
          return;
        }
    }
  }
  double *ht = gdn_outputs_ht(jb->out, b, j);
  for (int64_t i = 0; i < s->Dk * Dv; i++)
    if (!emit(jb, w, 1, wp->h[i], wr->h[i], &ht[i])) {
      jb->fail[item] = s->T;
      return;
    }
}

int orc_check_inputs(const gdn_inputs *in, gdn_error *e) {
  if (!in) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle: inputs missing (NULL)");
  int rc = gdn_shape_validate(&in->shape, e);
  if (rc) return gdn_error_prefix(e, "oracle: ");
  const struct { const char *name; const float *p; } t[] = {
      {"q", in->q}, {"k", in->k}, {"v", in->v}, {"g", in->g}, {"beta", in->beta}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!t[i].p)
      return gdn_error_set(e, GDN_ERR_INPUT, "oracle: input %s is missing (NULL)", t[i].name);
  if ((rc = gdn_inputs_check_values(in, NULL, e))) return gdn_error_prefix(e, "oracle: ");
  if (in->has_scale && !isfinite(in->scale))
    return gdn_error_set(e, GDN_ERR_INPUT, "oracle: input scale = %g is not finite", in->scale);
  return GDN_OK;
}

/* Columns per token-form item: 64 amortises the per-token preparation of q
 * and k (about 6 Dk MPFR operations) over 3 x 64 x Dk multiply-adds (3 %);
 * halved (to 8 at least) while there are fewer than two items per thread.
 * Results do not depend on it. */
static int64_t column_block(const oracle_config *cfg, const gdn_shape *s, int threads) {
  if (cfg->column_block > 0) return cfg->column_block < s->Dv ? cfg->column_block : s->Dv;
  int64_t nb = s->Dv < 64 ? s->Dv : 64;
  while (nb > 8 && s->B * s->Hv * ((s->Dv + nb - 1) / nb) < 2 * (int64_t)threads) nb = (nb + 1) / 2;
  return nb;
}

/* The error of the first failing item in item order -- heads in (b, j)
 * order, so the whole run's first failing head whatever the blocking -- or
 * GDN_OK when none failed. */
static int items_first_error(const job *jb, int64_t n_items, int token_form, oracle_tally *tally, gdn_error *e) {
  const gdn_shape *s = &jb->in->shape;
  for (int64_t it = 0; it < n_items; it++) {
    if (jb->fail[it] < 0) continue;
    const int64_t blk = token_form ? it / jb->nblk : it, b = blk / s->Hv, j = blk % s->Hv;
    if (tally) tally->failed_head = blk;
    if (jb->fail[it] < s->T)
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "oracle: the recurrence left MPFR's exponent range (a non-finite value) at "
                           "b=%lld, value head %lld, token t=%lld: |g| is too large",
                           (long long)b, (long long)j, (long long)jb->fail[it]);
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "oracle: the recurrence left MPFR's exponent range (a non-finite value) in "
                         "the final state of b=%lld, value head %lld: |g| is too large",
                         (long long)b, (long long)j);
  }
  return GDN_OK;
}

/* The certificate from the workers' accumulators, merged into ws[0]'s (a
 * maximum: exact in any order), and the tally of a part. */
static void cert_fill(oracle_certificate *cert, const oracle_config *cfg, mpfr_prec_t P, worker *ws, int nw,
                      oracle_tally *tally) {
  for (int i = 1; i < nw; i++)
    for (int ti = 0; ti < 2; ti++) orc_acc_merge(&ws[0].acc[ti], &ws[i].acc[ti]);
  cert->precision_bits = (int)cfg->prec;
  cert->check_bits = (int)P;
  cert->certified_o = orc_acc_bits(&ws[0].acc[0], &cert->floor_o);
  cert->certified_ht = orc_acc_bits(&ws[0].acc[1], &cert->floor_ht);
  cert->certified_bits = cert->certified_o < cert->certified_ht ? cert->certified_o : cert->certified_ht;
  for (int ti = 0; tally && ti < 2; ti++) orc_tally_put(tally, ti, &ws[0].acc[ti]);
}

int orc_run_mpfr(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out,
                 oracle_certificate *cert, const unsigned char *heads, oracle_tally *tally,
                 gdn_error *e) {
  if (cert) memset(cert, 0, sizeof *cert);
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle: outputs missing (NULL)");
  gdn_outputs_clear(out);
  int rc;
  if ((rc = oracle_config_validate(cfg, cert != NULL, e)) || (rc = orc_check_inputs(in, e))) return rc;
  if (in->seg && cfg->form == ORACLE_FORM_CHUNKED)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "oracle: the chunked form does not model packed documents (segment ids); "
                         "use the token form");
  const gdn_shape *s = &in->shape;
  const mpfr_prec_t P = cfg->check_prec ? cfg->check_prec : cfg->prec + 64;
  if ((rc = gdn_outputs_alloc(out, s, GDN_DTYPE_F64, e))) return rc;

  int threads = gdn_threads_get();
  orc_meter meter; /* the selected heads' token-columns: the line reaches 100 % when they are done */
  int64_t sel_heads = s->B * s->Hv;
  for (int64_t h = 0; heads && h < s->B * s->Hv; h++) sel_heads -= !heads[h];
  orc_meter_init(&meter, cfg->progress, sel_heads * s->T * s->Dv);
  job jb = {in, out, cert != NULL, 0, 1, cfg->chunk, NULL, heads, &meter};
  int64_t n_items = s->B * s->Hv;
  if (cfg->form == ORACLE_FORM_TOKEN) {
    const gdn_shape bs = orc_block_shape(s, heads);
    jb.nb = column_block(cfg, &bs, threads);
    jb.nblk = (s->Dv + jb.nb - 1) / jb.nb;
    n_items *= jb.nblk;
  }
  int nt = n_items < threads ? (int)n_items : threads;
  worker *ws = NULL;
  int nw = 0;
  jb.fail = gdn_malloc((size_t)n_items * sizeof(int64_t), "oracle item status", e);
  if (!jb.fail) goto fail;
  for (int64_t i = 0; i < n_items; i++) jb.fail[i] = -1;
  ws = gdn_calloc((size_t)nt, sizeof(worker), "oracle workers", e);
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
    worker *w = &ws[omp_get_thread_num()];
#pragma omp for schedule(dynamic)
    for (int64_t it = 0; it < n_items; it++) {
      if (heads && !heads[cfg->form == ORACLE_FORM_TOKEN ? it / jb.nblk : it]) continue;
      if (cfg->form == ORACLE_FORM_TOKEN)
        run_token_item(&jb, w, it);
      else
        run_chunked_item(&jb, w, it);
    }
    /* MPFR's caches (log 2 for exp, ...) are per thread: release them here,
     * on the thread that filled them. */
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
  }
  orc_meter_done(&meter);

  if (items_first_error(&jb, n_items, cfg->form == ORACLE_FORM_TOKEN, tally, e)) goto fail;
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

int oracle_run(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out, gdn_error *e) {
  return orc_run_mpfr(in, cfg, out, NULL, NULL, NULL, e);
}

int oracle_run_certified(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out,
                         oracle_certificate *cert, gdn_error *e) {
  if (!cert) {
    if (out) gdn_outputs_clear(out);
    return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle: certificate missing (NULL)");
  }
  return orc_run_mpfr(in, cfg, out, cert, NULL, NULL, e);
}
