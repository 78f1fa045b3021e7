/* oracle_run_dd: the dd tier's driver -- work items, threads, the sampled
 * certificate (oracle.h, "The double-double tier").
 *
 * Work items are column blocks of one (b, j): first one sample item per
 * (b, j) (the sampled columns, in dd and in MPFR in lockstep), then the
 * rest of each head's columns cut into blocks.  Items write disjoint
 * slices of o and ht; the certificate is a maximum over elements (exact in
 * any order); the first error reported is the least (b, j, t), which does
 * not depend on the blocking.  So nothing depends on the thread count.
 * Workspaces are allocated before the parallel region, in thread order
 * (fault injection sees the same sequence on every run).
 */
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_rng.h"
#include "gdn_threads.h"
#include "oracle_dd_arith.h"
#include "oracle_internal.h"

/* Binary64 values are held exactly in MPFR at this many bits: hi + lo of
 * a double-word number spans at most 2^1024 / 2^-1074, 2098 bits. */
enum { DD_EXACT_PREC = 2200 };

/* The sample checks the guaranteed bound from this MPFR precision on. */
enum { DD_CHECK_BOUND_PREC = 120 };

/* The sample's hash seed: a constant, so the sample of a shape never
 * changes between runs, versions or machines. */
#define DD_SAMPLE_SEED UINT64_C(0x6464736d706c3031)

void oracle_dd_config_init(oracle_dd_config *cfg) {
  cfg->sample_prec = 128;
  cfg->sample_columns = 2;
  cfg->column_block = 0;
  cfg->progress = NULL;
  cfg->head0 = cfg->whole_hv = 0;
}

int oracle_dd_config_validate(const oracle_dd_config *cfg, gdn_error *e) {
  if (!cfg) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle dd config: missing (NULL)");
  int rc = orc_config_bits("oracle dd", "sample_prec", (long)cfg->sample_prec, e);
  if (!rc) rc = orc_config_nonneg("oracle dd", "sample_columns", cfg->sample_columns, "", e);
  if (!rc) rc = orc_config_nonneg("oracle dd", "column_block", cfg->column_block, " (0 = automatic)", e);
  if (!rc) rc = orc_config_placement("oracle dd", cfg->head0, cfg->whole_hv, e);
  return rc;
}

int64_t oracle_dd_sample_start_in(const gdn_shape *s, int64_t n, int64_t b, int64_t j, int64_t head0,
                                  int64_t whole_hv) {
  if (n >= s->Dv) return 0;
  const int64_t hv = whole_hv > 0 ? whole_hv : s->Hv;
  uint64_t h = gdn_rng_bits(DD_SAMPLE_SEED, (uint64_t)s->Dv, (uint64_t)(b * hv + head0 + j));
  return (int64_t)(h % (uint64_t)(s->Dv - n + 1));
}

int64_t oracle_dd_sample_start(const gdn_shape *s, int64_t n, int64_t b, int64_t j) {
  return oracle_dd_sample_start_in(s, n, b, j, 0, 0);
}

static struct {
  int64_t b, j, col, t;
  double rel;
} plant = {0, 0, -1, 0, 0.0};

void oracle_dd_test_plant(int64_t b, int64_t j, int64_t col, int64_t t, double rel) {
  plant.b = b, plant.j = j, plant.col = col, plant.t = t, plant.rel = rel;
}

typedef struct dd_item {
  int64_t b, j, c0, nc;
  int sample;
} dd_item;

enum { FAIL_NONE = 0, FAIL_DD = 1, FAIL_MPFR = 2 };

typedef struct dd_fail {
  int64_t t; /* t < T: at o_t (or exp(g_t)); T: the final state */
  int kind;
} dd_fail;

typedef struct dd_worker {
  orc_ddw dd;
  orc_tok mp;     /* the sample at sample_prec */
  orc_vars scr;   /* [0] a dd value exactly, [1] its difference from MPFR's */
  orc_acc acc[2]; /* the sampled certificate of o, ht */
  orc_acc bnd[2]; /* the guaranteed bound of o, ht (every element) */
  int64_t violations;
} dd_worker;

typedef struct dd_job {
  const gdn_inputs *in;
  gdn_outputs *out;
  const dd_item *items;
  dd_fail *fail;
  int check_bound; /* the sample's MPFR precision is high enough to check it */
  orc_meter *meter;
} dd_job;

/* An item's progress weight per token: its columns, an MPFR-sampled column
 * counting ORACLE_PROGRESS_MPFR_WEIGHT more (it also runs in double-word). */
static int64_t item_weight(const dd_item *x) {
  return x->nc * (x->sample ? 1 + ORACLE_PROGRESS_MPFR_WEIGHT : 1);
}

static void worker_init(dd_worker *w) {
  orc_ddw_init(&w->dd);
  orc_tok_init(&w->mp);
  orc_vars_init(&w->scr);
  orc_acc_init(&w->acc[0]);
  orc_acc_init(&w->acc[1]);
  orc_acc_init(&w->bnd[0]);
  orc_acc_init(&w->bnd[1]);
  w->violations = 0;
}

static void worker_clear(dd_worker *w) {
  orc_ddw_clear(&w->dd);
  orc_tok_clear(&w->mp);
  orc_vars_clear(&w->scr);
  orc_acc_clear(&w->acc[0]);
  orc_acc_clear(&w->acc[1]);
  orc_acc_clear(&w->bnd[0]);
  orc_acc_clear(&w->bnd[1]);
}

static int worker_alloc(dd_worker *w, const gdn_shape *s, const oracle_dd_config *cfg, int64_t nbmax,
                        int64_t ns, gdn_error *e) {
  int rc;
  if ((rc = orc_ddw_alloc(&w->dd, s->Dk, nbmax, e)) ||
      (rc = orc_acc_alloc(&w->bnd[0], ORACLE_DD_BITS, "oracle dd bound of o", e)) ||
      (rc = orc_acc_alloc(&w->bnd[1], ORACLE_DD_BITS, "oracle dd bound of ht", e)))
    return rc;
  if (ns == 0) return GDN_OK;
  if ((rc = orc_tok_alloc(&w->mp, cfg->sample_prec, s->Dk, ns, e)) ||
      (rc = orc_vars_alloc(&w->scr, 2, cfg->sample_prec + DD_EXACT_PREC,
                           "oracle dd certificate scratch", e)) ||
      (rc = orc_acc_alloc(&w->acc[0], ORACLE_DD_BITS, "oracle dd certificate of o", e)) ||
      (rc = orc_acc_alloc(&w->acc[1], ORACLE_DD_BITS, "oracle dd certificate of ht", e)))
    return rc;
  return GDN_OK;
}

/* The dd value hi + lo against the MPFR value r; and, when the MPFR
 * precision allows, the guaranteed bound against |hi + lo - r|: MPFR's own
 * error there is ~2^-(p - 106) of the dd bound (the same bound at p
 * bits), so allowing 2^-10 of it leaves no room for a false alarm. */
static void compare(const dd_job *jb, dd_worker *w, int ti, double hi, double lo, mpfr_srcptr r,
                    double bound) {
  mpfr_ptr x = w->scr.v[0], d = w->scr.v[1];
  mpfr_set_d(x, hi, MPFR_RNDN);
  mpfr_add_d(x, x, lo, MPFR_RNDN); /* exact at DD_EXACT_PREC bits */
  if (jb->check_bound) {
    mpfr_sub(d, x, r, MPFR_RNDA);
    mpfr_abs(d, d, MPFR_RNDN);
    if (mpfr_cmp_d(d, bound * (1.0 + 0x1p-10)) > 0) w->violations++;
  }
  orc_acc_add(&w->acc[ti], x, r, d);
}

static void maybe_plant(orc_ddw *d, int64_t t) {
  if (plant.col < 0 || d->b != plant.b || d->j != plant.j || t != plant.t) return;
  if (plant.col < d->c0 || plant.col >= d->c0 + d->nc) return;
  int64_t c = plant.col - d->c0;
  orc_dd h = orc_dd_add_d((orc_dd){d->hh[c], d->hl[c]}, plant.rel * d->hh[c]);
  d->hh[c] = h.hi, d->hl[c] = h.lo;
}

static void run_item(const dd_job *jb, dd_worker *w, int64_t it) {
  const gdn_inputs *in = jb->in;
  const gdn_shape *s = &in->shape;
  const dd_item *item = &jb->items[it];
  const int64_t b = item->b, j = item->j, c0 = item->c0, nc = item->nc;
  orc_ddw *d = &w->dd;
  orc_tok *m = &w->mp;
  orc_ddw_begin(d, in, b, j, c0, nc);
  if (item->sample) orc_tok_begin(m, in, b, j, c0, nc);
  for (int64_t t = 0; t < s->T; t++) {
    if (orc_ddw_step(d, in, t)) {
      jb->fail[it] = (dd_fail){t, FAIL_DD};
      return;
    }
    double *o = gdn_outputs_o(jb->out, b, t, j) + c0;
    for (int64_t c = 0; c < nc; c++) {
      if (!isfinite(d->oh[c])) {
        jb->fail[it] = (dd_fail){t, FAIL_DD};
        return;
      }
      o[c] = d->oh[c];
      orc_acc_add_d(&w->bnd[0], d->oh[c], d->bo[c]);
    }
    if (item->sample) {
      orc_tok_step(m, in, t);
      for (int64_t c = 0; c < nc; c++) {
        if (!mpfr_number_p(m->o[c])) {
          jb->fail[it] = (dd_fail){t, FAIL_MPFR};
          return;
        }
        compare(jb, w, 0, d->oh[c], d->ol[c], m->o[c], d->bo[c]);
      }
    }
    maybe_plant(d, t);
    if ((t + 1) % ORC_METER_TOKENS == 0) orc_meter_add(jb->meter, ORC_METER_TOKENS * item_weight(item));
  }
  orc_meter_add(jb->meter, s->T % ORC_METER_TOKENS * item_weight(item));
  double *ht = gdn_outputs_ht(jb->out, b, j);
  for (int64_t i = 0; i < s->Dk; i++)
    for (int64_t c = 0; c < nc; c++) {
      double hi = d->hh[i * nc + c], lo = d->hl[i * nc + c];
      if (!isfinite(hi)) {
        jb->fail[it] = (dd_fail){s->T, FAIL_DD};
        return;
      }
      ht[i * s->Dv + c0 + c] = hi;
      orc_acc_add_d(&w->bnd[1], hi, d->E[c]);
      if (item->sample) {
        mpfr_srcptr r = orc_tok_h(m, i, c);
        if (!mpfr_number_p(r)) {
          jb->fail[it] = (dd_fail){s->T, FAIL_MPFR};
          return;
        }
        compare(jb, w, 1, hi, lo, r, d->E[c]);
      }
    }
}

/* Columns per dd item.  Every item repeats the per-token preparation
 * (~10 MPFR operations and O(Dk) double-word ones: a few microseconds,
 * some 4 columns of double-word work at Dk = 128), and a narrow block
 * keeps few columns in flight (measured: 2.15 ns/MAC at 128 columns, 2.8
 * at 32, 4.4 at 8), so items are as wide as the parallelism allows: about
 * two items per thread in all, counting the sample items (the longest,
 * taken first), blocks of at least 8 columns.  Results do not depend on
 * it. */
static int64_t column_block(const oracle_dd_config *cfg, const gdn_shape *s, int64_t ns, int threads) {
  int64_t rest = s->Dv - ns, heads = s->B * s->Hv;
  if (rest < 1) return 1;
  if (cfg->column_block > 0) return cfg->column_block < rest ? cfg->column_block : rest;
  int64_t want = (2 * (int64_t)threads + heads - 1) / heads - (ns > 0 ? 1 : 0);
  if (want < 1) want = 1;
  int64_t nb = (rest + want - 1) / want;
  if (nb < 8) nb = rest < 8 ? rest : 8;
  return nb;
}

/* Cuts [lo, hi) into ceil(len / nb) near-equal blocks (appended). */
static void cut(dd_item *items, int64_t *n, int64_t b, int64_t j, int64_t lo, int64_t hi, int64_t nb) {
  int64_t len = hi - lo;
  if (len <= 0) return;
  int64_t k = (len + nb - 1) / nb;
  for (int64_t q = 0, c = lo; q < k; q++) {
    int64_t w = len / k + (q < len % k ? 1 : 0);
    items[(*n)++] = (dd_item){b, j, c, w, 0};
    c += w;
  }
}

static int first_fail(const dd_item *a, const dd_fail *fa, const dd_item *b, const dd_fail *fb) {
  if (a->b != b->b) return a->b < b->b;
  if (a->j != b->j) return a->j < b->j;
  if (fa->t != fb->t) return fa->t < fb->t;
  return fa->kind < fb->kind;
}

int oracle_run_dd(const gdn_inputs *in, const oracle_dd_config *cfg, gdn_outputs *out,
                  oracle_dd_certificate *cert, gdn_error *e) {
  return orc_run_dd(in, cfg, out, cert, NULL, NULL, e);
}

/* The run's work items (above) into *items (*n of them, allocated here):
 * per head its sample item, then its other columns cut into blocks of
 * *nb, chosen for the selected heads (sel; NULL: all) so that a part of
 * one head still spreads over the threads. */
static int items_make(const gdn_shape *s, const oracle_dd_config *cfg, const unsigned char *sel, int64_t ns,
                      int threads, dd_item **items, int64_t *n, int64_t *nb, gdn_error *e) {
  const gdn_shape bs = orc_block_shape(s, sel);
  *nb = column_block(cfg, &bs, ns, threads);
  /* Per head: the sample, and at most two ranges of ceil(len / nb) blocks. */
  const int64_t per_head = (ns > 0 ? 1 : 0) + (s->Dv - ns + *nb - 1) / *nb + 1;
  *n = 0;
  if (!(*items = gdn_calloc((size_t)(s->B * s->Hv * per_head), sizeof(dd_item), "oracle dd work items", e)))
    return e ? e->code : GDN_ERR_NOMEM;
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t j = 0; ns > 0 && j < s->Hv; j++)
      (*items)[(*n)++] = (dd_item){b, j, oracle_dd_sample_start_in(s, ns, b, j, cfg->head0, cfg->whole_hv), ns, 1};
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t j = 0; j < s->Hv; j++) {
      int64_t s0 = ns > 0 ? oracle_dd_sample_start_in(s, ns, b, j, cfg->head0, cfg->whole_hv) : 0;
      cut(*items, n, b, j, 0, s0, *nb);
      cut(*items, n, b, j, s0 + ns, s->Dv, *nb);
    }
  return GDN_OK;
}

/* Whether the run computes item x (its head selected). */
static int item_selected(const dd_item *x, const gdn_shape *s, const unsigned char *sel) {
  return !sel || sel[x->b * s->Hv + x->j];
}

/* nt workspaces, allocated in thread order (fault injection sees the same
 * sequence on every run); *nw counts those initialised, to be cleared. */
static int workers_make(dd_worker *ws, int nt, const gdn_shape *s, const oracle_dd_config *cfg, int64_t nbmax,
                        int64_t ns, int *nw, gdn_error *e) {
  for (*nw = 0; *nw < nt;) {
    worker_init(&ws[*nw]);
    int rc = worker_alloc(&ws[(*nw)++], s, cfg, nbmax, ns, e);
    if (rc) return rc;
  }
  return GDN_OK;
}

/* The error of the first failing item in (b, j, t, kind) order -- the
 * whole run's, whatever the blocking -- or GDN_OK when none failed. */
static int items_first_error(const dd_job *jb, int64_t n_items, oracle_tally *tally, gdn_error *e) {
  const gdn_shape *s = &jb->in->shape;
  int64_t bad = -1;
  for (int64_t it = 0; it < n_items; it++)
    if (jb->fail[it].kind != FAIL_NONE &&
        (bad < 0 || first_fail(&jb->items[it], &jb->fail[it], &jb->items[bad], &jb->fail[bad])))
      bad = it;
  if (bad < 0) return GDN_OK;
  const dd_item *x = &jb->items[bad];
  const dd_fail *f = &jb->fail[bad];
  if (tally) tally->failed_head = x->b * s->Hv + x->j;
  char where[96];
  if (f->t < s->T)
    snprintf(where, sizeof where, "at b=%lld, value head %lld, token t=%lld", (long long)x->b, (long long)x->j,
             (long long)f->t);
  else
    snprintf(where, sizeof where, "in the final state of b=%lld, value head %lld", (long long)x->b,
             (long long)x->j);
  if (f->kind == FAIL_DD)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "oracle (dd tier): the recurrence left binary64's exponent range (a "
                         "non-finite value) %s: exp(g) or the state overflows binary64; the MPFR "
                         "tier has the range for it",
                         where);
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "oracle: the recurrence left MPFR's exponent range (a non-finite value) %s: "
                       "|g| is too large",
                       where);
}

/* The certificate from the workers' accumulators, merged into ws[0]'s (a
 * maximum: exact in any order), and the tally of a part.  nw >= 1. */
static void cert_fill(oracle_dd_certificate *cert, const dd_job *jb, const oracle_dd_config *cfg, int64_t ns,
                      dd_worker *ws, int nw, oracle_tally *tally) {
  const gdn_shape *s = &jb->in->shape;
  const int64_t heads = s->B * s->Hv;
  cert->precision_bits = ORACLE_DD_BITS;
  cert->check_bits = (int)cfg->sample_prec;
  cert->sample_columns = ns;
  cert->sampled_columns = heads * ns;
  cert->total_columns = heads * s->Dv;
  for (int i = 1; i < nw; i++)
    for (int ti = 0; ti < 2; ti++) orc_acc_merge(&ws[0].bnd[ti], &ws[i].bnd[ti]);
  cert->guaranteed_o = orc_acc_bits(&ws[0].bnd[0], NULL);
  cert->guaranteed_ht = orc_acc_bits(&ws[0].bnd[1], NULL);
  cert->guaranteed_bits = cert->guaranteed_o < cert->guaranteed_ht ? cert->guaranteed_o : cert->guaranteed_ht;
  int gno = orc_acc_normwise(&ws[0].bnd[0]), gnh = orc_acc_normwise(&ws[0].bnd[1]);
  cert->guaranteed_normwise = gno < gnh ? gno : gnh;
  cert->bound_violations = -1;
  if (jb->check_bound) {
    cert->bound_violations = 0;
    for (int i = 0; i < nw; i++) cert->bound_violations += ws[i].violations;
  }
  if (ns > 0) {
    for (int i = 1; i < nw; i++)
      for (int ti = 0; ti < 2; ti++) orc_acc_merge(&ws[0].acc[ti], &ws[i].acc[ti]);
    cert->certified_o = orc_acc_bits(&ws[0].acc[0], &cert->floor_o);
    cert->certified_ht = orc_acc_bits(&ws[0].acc[1], &cert->floor_ht);
    cert->certified_bits = cert->certified_o < cert->certified_ht ? cert->certified_o : cert->certified_ht;
    int no = orc_acc_normwise(&ws[0].acc[0]), nh = orc_acc_normwise(&ws[0].acc[1]);
    cert->normwise_bits = no < nh ? no : nh;
  }
  if (tally) {
    tally->v[0] = (double)cert->bound_violations;
    for (int ti = 0; ti < 2; ti++) {
      if (ns > 0) orc_tally_put(tally, ti, &ws[0].acc[ti]);
      orc_tally_put(tally, 2 + ti, &ws[0].bnd[ti]);
    }
  }
}

int orc_run_dd(const gdn_inputs *in, const oracle_dd_config *cfg, gdn_outputs *out,
               oracle_dd_certificate *cert, const unsigned char *sel, oracle_tally *tally,
               gdn_error *e) {
  if (cert) memset(cert, 0, sizeof *cert);
  if (!out) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle: outputs missing (NULL)");
  gdn_outputs_clear(out);
  if (!cert) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle: dd certificate missing (NULL)");
  int rc;
  if ((rc = oracle_dd_config_validate(cfg, e)) || (rc = orc_check_inputs(in, e))) return rc;
  if (cfg->whole_hv && cfg->head0 + in->shape.Hv > cfg->whole_hv)
    return gdn_error_set(e, GDN_ERR_INPUT, "oracle dd: heads %" PRId64 "..%" PRId64 " placed in a run of %" PRId64
                         " value heads (head0 + Hv > whole_hv)", cfg->head0, cfg->head0 + in->shape.Hv - 1,
                         cfg->whole_hv);
  const gdn_shape *s = &in->shape;
  if ((rc = gdn_outputs_alloc(out, s, GDN_DTYPE_F64, e))) return rc;

  const int threads = gdn_threads_get();
  const int64_t ns = cfg->sample_columns < s->Dv ? cfg->sample_columns : s->Dv;
  orc_meter meter;
  dd_job jb = {in, out, NULL, NULL, ns > 0 && cfg->sample_prec >= DD_CHECK_BOUND_PREC, &meter};
  dd_item *items = NULL;
  dd_worker *ws = NULL;
  int nw = 0;
  int64_t n_items = 0, nb = 0;
  if (items_make(s, cfg, sel, ns, threads, &items, &n_items, &nb, e)) goto fail;
  jb.items = items;
  int64_t work = 0; /* the selected heads' only: the line reaches 100 % when they are done */
  for (int64_t it = 0; it < n_items; it++)
    if (item_selected(&items[it], s, sel)) work += s->T * item_weight(&items[it]);
  orc_meter_init(&meter, cfg->progress, work);
  jb.fail = gdn_calloc((size_t)n_items, sizeof(dd_fail), "oracle dd item status", e);
  if (!jb.fail) goto fail;
  int nt = n_items < threads ? (int)n_items : threads;
  ws = gdn_calloc((size_t)nt, sizeof(dd_worker), "oracle dd workers", e);
  if (!ws || workers_make(ws, nt, s, cfg, nb > ns ? nb : ns, ns, &nw, e)) goto fail;

#pragma omp parallel num_threads(nt)
  {
    dd_worker *w = &ws[omp_get_thread_num()];
#pragma omp for schedule(dynamic)
    for (int64_t it = 0; it < n_items; it++)
      if (item_selected(&items[it], s, sel)) run_item(&jb, w, it);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
  }
  orc_meter_done(&meter);
  if (items_first_error(&jb, n_items, tally, e)) goto fail;
  cert_fill(cert, &jb, cfg, ns, ws, nw, tally);
  for (int i = 0; i < nw; i++) worker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  gdn_free(items);
  return GDN_OK;

fail:
  for (int i = 0; i < nw; i++) worker_clear(&ws[i]);
  gdn_free(ws);
  gdn_free(jb.fail);
  gdn_free(items);
  gdn_outputs_clear(out);
  memset(cert, 0, sizeof *cert);
  return e ? e->code : GDN_ERR_NOMEM;
}
