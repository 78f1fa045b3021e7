/* oracle_progress: both tiers report their work as it is done, and
 * reporting changes nothing.
 *   - the callback sees done strictly increasing, the last call done ==
 *     total, total the run's token-columns (an MPFR-sampled dd column
 *     weighted ORACLE_PROGRESS_MPFR_WEIGHT more), and more than one call
 *     (T spans several ORC_METER_TOKENS);
 *   - outputs and certificates are bit for bit those of the same run
 *     without a callback, at 1 and 2 threads;
 *   - a part (oracle_part.h: a subset of the heads, as the MPI dealing
 *     runs) counts its own heads' work only, so its line ends at 100 %:
 *     total = the selected heads' token-columns, not every head's (which
 *     the meter counted before; the check fails on that total);
 *   - the VJP (oracle_vjp.h), MPFR certified and dd, whole and as a part
 *     (selected (b, key head) items): total = the selected items' reverse
 *     steps, T x their value heads, the same checks, and gradients and
 *     certificates bit for bit those without a callback;
 *   - Kimi Delta Attention's oracles (oracle_kda.h, oracle_kda_vjp.h), the
 *     forward MPFR certified and dd, the VJP MPFR certified and dd: the
 *     same totals as GDN's (token-columns, sampled dd columns weighted;
 *     reverse steps), the same checks, results bit for bit;
 *   - negative controls: no callback, no calls; a recorder that sees a
 *     decrease or a short final count is caught by the same checks; a
 *     part's total is told apart from every item's. */
#include "oracle_test_util.h"

#include <stdlib.h>

#include "gdn_chgate.h"
#include "gdn_chgrads.h"
#include "gdn_threads.h"
#include "oracle_kda.h"
#include "oracle_kda_vjp.h"
#include "oracle_part.h"
#include "../check_runner.h"

typedef struct rec {
  int64_t calls, last, total, bad; /* bad: a call with done <= the previous */
} rec;

static void on_progress(void *arg, int64_t done, int64_t total) {
  rec *r = arg;
  if (done <= r->last || done > total) r->bad++;
  r->calls++;
  r->last = done;
  r->total = total;
}

/* The checks a run's record must pass (0: it does). */
static int rec_fails(const rec *r, int64_t want_total) {
  return r->bad || r->calls < 2 || r->last != r->total || r->total != want_total;
}

static const gdn_shape shape = {1, 2500, 1, 2, 8, 6}; /* 3 reporting periods per item */

START_TEST(dd_reports_and_changes_nothing) {
  gdn_inputs in = tsu_inputs(shape, GDN_SYNTH_SLOW_GATES | GDN_SYNTH_H0, 3);
  for (int nt = 1; nt <= 2; nt++) {
    gdn_threads_set(nt);
    gdn_error e;
    gdn_error_init(&e);
    oracle_dd_config c;
    oracle_dd_config_init(&c);
    c.sample_columns = 2;
    gdn_outputs a, b;
    gdn_outputs_init(&a);
    gdn_outputs_init(&b);
    oracle_dd_certificate ca, cb;
    ck_assert_int_eq(oracle_run_dd(&in, &c, &a, &ca, &e), GDN_OK);
    rec r = {0, 0, 0, 0};
    oracle_progress p = {on_progress, &r};
    c.progress = &p;
    ck_assert_int_eq(oracle_run_dd(&in, &c, &b, &cb, &e), GDN_OK);
    const int64_t want = shape.T * shape.Hv * (shape.Dv + 2 * ORACLE_PROGRESS_MPFR_WEIGHT);
    ck_assert_msg(!rec_fails(&r, want), "calls %lld last %lld total %lld (want %lld) bad %lld",
                  (long long)r.calls, (long long)r.last, (long long)r.total, (long long)want, (long long)r.bad);
    ck_assert_mem_eq(a.o, b.o, (size_t)gdn_shape_numel_v(&shape) * sizeof(double));
    ck_assert_mem_eq(a.ht, b.ht, (size_t)gdn_shape_numel_state(&shape) * sizeof(double));
    ck_assert_mem_eq(&ca, &cb, sizeof ca);
    /* Negative controls: a short final count, a repeated count. */
    rec s = r;
    s.last = s.total - 1;
    ck_assert(rec_fails(&s, want));
    s = r;
    on_progress(&s, s.last, s.total);
    ck_assert(rec_fails(&s, want));
    gdn_outputs_clear(&a);
    gdn_outputs_clear(&b);
  }
  gdn_inputs_clear(&in);
}
END_TEST

static void mpfr_case(oracle_form form, int64_t chunk, int certified) {
  gdn_inputs in;
  const gdn_shape s = {1, 2100, 1, 1, 4, 3};
  tsu_synth(&in, s, GDN_SYNTH_SLOW_GATES, 5);
  for (int nt = 1; nt <= 2; nt++) {
    gdn_threads_set(nt);
    gdn_error e;
    gdn_error_init(&e);
    oracle_config c = otu_cfg(64, form, chunk);
    gdn_outputs a, b;
    gdn_outputs_init(&a);
    gdn_outputs_init(&b);
    oracle_certificate ca, cb;
    memset(&ca, 0, sizeof ca);
    memset(&cb, 0, sizeof cb);
    ck_assert_int_eq(certified ? oracle_run_certified(&in, &c, &a, &ca, &e) : oracle_run(&in, &c, &a, &e), GDN_OK);
    rec r = {0, 0, 0, 0}, none = {0, 0, 0, 0};
    oracle_progress p = {on_progress, &r};
    c.progress = &p;
    ck_assert_int_eq(certified ? oracle_run_certified(&in, &c, &b, &cb, &e) : oracle_run(&in, &c, &b, &e), GDN_OK);
    ck_assert_msg(!rec_fails(&r, s.T * s.Dv), "form %d: calls %lld last %lld total %lld bad %lld", (int)form,
                  (long long)r.calls, (long long)r.last, (long long)r.total, (long long)r.bad);
    ck_assert_mem_eq(a.o, b.o, (size_t)gdn_shape_numel_v(&s) * sizeof(double));
    ck_assert_mem_eq(a.ht, b.ht, (size_t)gdn_shape_numel_state(&s) * sizeof(double));
    ck_assert_mem_eq(&ca, &cb, sizeof ca);
    ck_assert(rec_fails(&none, s.T * s.Dv)); /* negative control: no callback, no calls */
    gdn_outputs_clear(&a);
    gdn_outputs_clear(&b);
  }
  gdn_inputs_clear(&in);
}

START_TEST(mpfr_reports_and_changes_nothing) {
  mpfr_case(ORACLE_FORM_TOKEN, 0, 1);
  mpfr_case(ORACLE_FORM_TOKEN, 0, 0);
  mpfr_case(ORACLE_FORM_CHUNKED, 64, 1);
}
END_TEST

/* Heads 0, 2 and 3 of B Hv = 2 x 2 selected: three quarters of the work. */
START_TEST(part_meter_follows_selection) {
  const gdn_shape ps = {2, 1100, 1, 2, 8, 6};
  const unsigned char heads[4] = {1, 0, 1, 1};
  const int64_t n_sel = 3, all = ps.B * ps.Hv;
  gdn_inputs in = tsu_inputs(ps, GDN_SYNTH_SLOW_GATES, 9);
  for (int nt = 1; nt <= 2; nt++) {
    gdn_threads_set(nt);
    gdn_error e;
    gdn_error_init(&e);
    gdn_outputs out;
    gdn_outputs_init(&out);
    oracle_tally t;
    oracle_tally_init(&t);
    oracle_dd_config dc;
    oracle_dd_config_init(&dc);
    dc.sample_columns = 2;
    rec r = {0, 0, 0, 0};
    oracle_progress p = {on_progress, &r};
    dc.progress = &p;
    ck_assert_msg(oracle_run_dd_part(&in, &dc, heads, &out, &t, &e) == GDN_OK, "%s", e.msg);
    /* per head: Dv dd columns, the 2 sampled ones weighted 64 more */
    const int64_t per_head = ps.T * (ps.Dv + 2 * ORACLE_PROGRESS_MPFR_WEIGHT);
    ck_assert_msg(!rec_fails(&r, n_sel * per_head), "dd: total %lld, want %lld (every head: %lld)",
                  (long long)r.total, (long long)(n_sel * per_head), (long long)(all * per_head));
    ck_assert(rec_fails(&r, all * per_head)); /* the old total is told apart */
    oracle_tally_clear(&t);
    for (int form = 0; form < 2; form++) {
      oracle_config c = otu_cfg(64, form == 0 ? ORACLE_FORM_TOKEN : ORACLE_FORM_CHUNKED, 64);
      rec m = {0, 0, 0, 0};
      oracle_progress mp = {on_progress, &m};
      c.progress = &mp;
      oracle_tally_init(&t);
      ck_assert_msg(oracle_run_part(&in, &c, heads, &out, &t, &e) == GDN_OK, "%s", e.msg);
      ck_assert_msg(!rec_fails(&m, n_sel * ps.T * ps.Dv), "mpfr form %d: total %lld, want %lld", form,
                    (long long)m.total, (long long)(n_sel * ps.T * ps.Dv));
      oracle_tally_clear(&t);
    }
    gdn_outputs_clear(&out);
  }
  gdn_inputs_clear(&in);
}
END_TEST

/* Two runs' gradients bit for bit. */
static void grads_same(const gdn_grads *a, const gdn_grads *b, const gdn_shape *s) {
  for (int id = 0; id < GDN_GRADS_N; id++)
    ck_assert_mem_eq(gdn_grads_tensor_c(a, id), gdn_grads_tensor_c(b, id), gdn_grads_numel(s, id) * sizeof(double));
}

/* One VJP run (tier dd or MPFR certified, items NULL: whole) with the
 * recorder r (NULL: none) into g; returns its certificate's bytes in cert. */
static void vjp_run(int dd, const gdn_inputs *in, const gdn_cotangents *ct, const unsigned char *items, rec *r,
                    gdn_grads *g, void *cert, size_t *cert_n) {
  gdn_error e;
  gdn_error_init(&e);
  oracle_progress p = {on_progress, r};
  oracle_tally t;
  oracle_tally_init(&t);
  int rc;
  if (dd) {
    oracle_vjp_dd_config c;
    oracle_vjp_dd_config_init(&c);
    c.progress = r ? &p : NULL;
    rc = items ? oracle_vjp_dd_part(in, ct, &c, items, g, &t, &e) : oracle_vjp_dd(in, ct, &c, g, cert, &e);
    *cert_n = items ? 0 : sizeof(oracle_vjp_dd_certificate);
  } else {
    oracle_vjp_config c;
    oracle_vjp_config_init(&c);
    c.prec = 64;
    c.progress = r ? &p : NULL;
    rc = items ? oracle_vjp_part(in, ct, &c, items, g, &t, &e) : oracle_vjp_certified(in, ct, &c, g, cert, &e);
    *cert_n = items ? 0 : sizeof(oracle_vjp_certificate);
  }
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  oracle_tally_clear(&t);
}

START_TEST(vjp_reports_and_changes_nothing) {
  const gdn_shape vs = {2, 2100, 2, 4, 4, 3}; /* 3 reporting periods per item; 2 value heads per key head */
  const unsigned char items[4] = {1, 0, 1, 1};   /* (b, key head) items 0, 2, 3 */
  gdn_inputs in = tsu_inputs(vs, GDN_SYNTH_SLOW_GATES | GDN_SYNTH_H0, 11);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 12);
  const int64_t all = vs.B * vs.T * vs.Hv, part = 3 * vs.T * (vs.Hv / vs.Hk);
  for (int nt = 1; nt <= 2; nt++) {
    gdn_threads_set(nt);
    for (int dd = 0; dd < 2; dd++) {
      gdn_grads a, b;
      gdn_grads_init(&a), gdn_grads_init(&b);
      union {
        oracle_vjp_certificate m;
        oracle_vjp_dd_certificate d;
      } ca, cb;
      memset(&ca, 0, sizeof ca), memset(&cb, 0, sizeof cb);
      size_t n;
      rec r = {0, 0, 0, 0}, none = {0, 0, 0, 0};
      vjp_run(dd, &in, &ct, NULL, NULL, &a, &ca, &n);
      vjp_run(dd, &in, &ct, NULL, &r, &b, &cb, &n);
      ck_assert_msg(!rec_fails(&r, all), "%s: calls %lld last %lld total %lld (want %lld) bad %lld",
                    dd ? "dd" : "mpfr", (long long)r.calls, (long long)r.last, (long long)r.total, (long long)all,
                    (long long)r.bad);
      grads_same(&a, &b, &vs);
      ck_assert_mem_eq(&ca, &cb, n);
      ck_assert(rec_fails(&none, all)); /* negative control: no callback, no calls */
      rec m = {0, 0, 0, 0};
      vjp_run(dd, &in, &ct, items, &m, &b, NULL, &n);
      ck_assert_msg(!rec_fails(&m, part), "%s part: total %lld, want %lld", dd ? "dd" : "mpfr", (long long)m.total,
                    (long long)part);
      ck_assert(rec_fails(&m, all)); /* every item's total is told apart */
      gdn_grads_clear(&a), gdn_grads_clear(&b);
    }
  }
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
}
END_TEST

/* One KDA run, forward (vjp 0) or VJP, tier dd or MPFR certified, with the
 * recorder r (NULL: none): its results' and certificate's bytes appended
 * to *buf (so that two runs compare with one memcmp). */
typedef struct kbuf {
  unsigned char *p;
  size_t n;
} kbuf;

static void kbuf_put(kbuf *b, const void *x, size_t n) {
  b->p = realloc(b->p, b->n + n);
  ck_assert_ptr_nonnull(b->p);
  memcpy(b->p + b->n, x, n);
  b->n += n;
}

static void kda_run_rec(int vjp, int dd, const gdn_inputs *in, const gdn_chgate *g, const gdn_cotangents *ct, rec *r,
                        kbuf *b) {
  gdn_error e;
  gdn_error_init(&e);
  oracle_progress p = {on_progress, r};
  const oracle_progress *pp = r ? &p : NULL;
  const gdn_shape *s = &in->shape;
  int rc;
  if (!vjp) {
    gdn_outputs o;
    gdn_outputs_init(&o);
    if (dd) {
      oracle_dd_config c;
      oracle_dd_config_init(&c);
      c.sample_columns = 2, c.progress = pp;
      oracle_dd_certificate cert;
      rc = oracle_kda_run_dd(in, g, &c, &o, &cert, &e);
      kbuf_put(b, &cert, sizeof cert);
    } else {
      oracle_config c = otu_cfg(64, ORACLE_FORM_TOKEN, 0);
      c.progress = pp;
      oracle_certificate cert;
      memset(&cert, 0, sizeof cert);
      rc = oracle_kda_run(in, g, &c, &o, &cert, &e);
      kbuf_put(b, &cert, sizeof cert);
    }
    ck_assert_msg(rc == GDN_OK, "%s", e.msg);
    kbuf_put(b, o.o, (size_t)gdn_shape_numel_v(s) * sizeof(double));
    kbuf_put(b, o.ht, (size_t)gdn_shape_numel_state(s) * sizeof(double));
    gdn_outputs_clear(&o);
    return;
  }
  gdn_grads gr;
  gdn_grads_init(&gr);
  if (dd) {
    oracle_vjp_dd_config c;
    oracle_vjp_dd_config_init(&c);
    c.progress = pp;
    oracle_vjp_dd_certificate cert;
    rc = oracle_kda_vjp_dd(in, g, ct, &c, &gr, &cert, &e);
    kbuf_put(b, &cert, sizeof cert);
  } else {
    oracle_vjp_config c;
    oracle_vjp_config_init(&c);
    c.prec = 64, c.progress = pp;
    oracle_vjp_certificate cert;
    memset(&cert, 0, sizeof cert);
    rc = oracle_kda_vjp(in, g, ct, &c, &gr, &cert, &e);
    kbuf_put(b, &cert, sizeof cert);
  }
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  for (int id = 0; id < GDN_GRADS_N; id++)
    kbuf_put(b, gdn_grads_tensor_c(&gr, id), gdn_chgrads_numel(s, (gdn_grad_id)id) * sizeof(double));
  gdn_grads_clear(&gr);
}

START_TEST(kda_reports_and_changes_nothing) {
  const gdn_shape ks = {1, 2100, 1, 2, 4, 3}; /* 3 reporting periods per item; 2 value heads per key head */
  gdn_inputs in = tsu_inputs(ks, GDN_SYNTH_SLOW_GATES | GDN_SYNTH_H0, 13);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 14);
  gdn_chgate g;
  gdn_chgate_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&g, &ks, 13, &e), GDN_OK);
  const int64_t fwd_mpfr = ks.B * ks.Hv * ks.T * ks.Dv,
                fwd_dd = ks.B * ks.Hv * ks.T * (ks.Dv + 2 * ORACLE_PROGRESS_MPFR_WEIGHT), back = ks.B * ks.T * ks.Hv;
  for (int nt = 1; nt <= 2; nt++) {
    gdn_threads_set(nt);
    for (int k = 0; k < 4; k++) {
      const int vjp = k / 2, dd = k % 2;
      const int64_t want = vjp ? back : dd ? fwd_dd : fwd_mpfr;
      kbuf a = {NULL, 0}, b = {NULL, 0};
      rec r = {0, 0, 0, 0}, none = {0, 0, 0, 0};
      kda_run_rec(vjp, dd, &in, &g, &ct, NULL, &a);
      kda_run_rec(vjp, dd, &in, &g, &ct, &r, &b);
      ck_assert_msg(!rec_fails(&r, want), "kda %s %s: calls %lld last %lld total %lld (want %lld) bad %lld",
                    vjp ? "vjp" : "forward", dd ? "dd" : "mpfr", (long long)r.calls, (long long)r.last,
                    (long long)r.total, (long long)want, (long long)r.bad);
      ck_assert_uint_eq(a.n, b.n);
      ck_assert_mem_eq(a.p, b.p, a.n);
      ck_assert(rec_fails(&none, want)); /* negative control: no callback, no calls */
      /* negative control: the unweighted dd total (every column as one) is told apart */
      if (!vjp && dd) ck_assert(rec_fails(&r, fwd_mpfr));
      free(a.p), free(b.p);
    }
  }
  gdn_chgate_clear(&g);
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("oracle_progress", "core", 120, dd_reports_and_changes_nothing, mpfr_reports_and_changes_nothing,
    part_meter_follows_selection, vjp_reports_and_changes_nothing, kda_reports_and_changes_nothing)
