/* oracle_part: the oracle run a subset of heads at a time, its parts put
 * together, equals the whole run bit for bit -- outputs, the tally's
 * accumulators and every field of the certificate -- for both tiers, both
 * MPFR forms and several splits (round-robin over 1, 2, 4 and 7 parts,
 * more parts than heads included, and an irregular one).  Negative
 * controls: a split that computes one head twice and another never is
 * caught by the same comparisons; merging mismatched tallies is an error.
 * Errors: a part fails only for its own heads and names them; parts agree
 * with the whole run on the message by the least failed_head.  The MPFR
 * VJP likewise, by items (b, key head) of G = 2 value heads. */
#include <check.h>

#include "gdn_threads.h"
#include "oracle_part.h"
#include "oracle_test_util.h"
#include "../check_runner.h"

/* Heads of the test shapes: B = 2 x Hv = 3. */
enum { NH = 6, MAXP = 8 };

typedef struct split {
  int parts;
  unsigned char mask[MAXP][NH];
} split;

static split round_robin(int parts) {
  split s = {parts, {{0}}};
  for (int h = 0; h < NH; h++) s.mask[h % parts][h] = 1;
  return s;
}

/* o[b, :, j, :] and ht[b, j] of head h from src into dst. */
static void copy_head(gdn_outputs *dst, gdn_outputs *src, int64_t h) {
  const gdn_shape *s = &src->shape;
  int64_t b = h / s->Hv, j = h % s->Hv;
  for (int64_t t = 0; t < s->T; t++)
    memcpy(gdn_outputs_o(dst, b, t, j), gdn_outputs_o(src, b, t, j), (size_t)s->Dv * sizeof(double));
  memcpy(gdn_outputs_ht(dst, b, j), gdn_outputs_ht(src, b, j), (size_t)(s->Dk * s->Dv) * sizeof(double));
}

/* Runs every part (dd or MPFR), puts the outputs together and merges the
 * tallies in reverse part order (order must not matter). */
static void run_split(const gdn_inputs *in, const void *cfg, int dd, const split *sp, gdn_outputs *out,
                      oracle_tally *all) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(out);
  ck_assert_int_eq(gdn_outputs_alloc(out, &in->shape, GDN_DTYPE_F64, &e), GDN_OK);
  oracle_tally_init(all);
  for (int p = sp->parts - 1; p >= 0; p--) {
    gdn_outputs po;
    gdn_outputs_init(&po);
    oracle_tally t;
    oracle_tally_init(&t);
    int rc = dd ? oracle_run_dd_part(in, cfg, sp->mask[p], &po, &t, &e)
                : oracle_run_part(in, cfg, sp->mask[p], &po, &t, &e);
    ck_assert_msg(rc == GDN_OK, "part %d: %s", p, e.msg);
    ck_assert_int_eq(t.failed_head, -1);
    for (int h = 0; h < NH; h++)
      if (sp->mask[p][h]) copy_head(out, &po, h);
    if (!all->v) {
      *all = t;
    } else {
      ck_assert_msg(oracle_tally_merge(all, &t, &e) == GDN_OK, "merge: %s", e.msg);
      oracle_tally_clear(&t);
    }
    gdn_outputs_clear(&po);
  }
}

static int same_tally(const oracle_tally *a, const oracle_tally *b) {
  return a->tier == b->tier && a->cap == b->cap && a->n == b->n && !memcmp(a->v, b->v, a->n * sizeof(double));
}

static int same_cert(const oracle_certificate *a, const oracle_certificate *b) {
  return a->precision_bits == b->precision_bits && a->check_bits == b->check_bits &&
         a->certified_bits == b->certified_bits && a->certified_o == b->certified_o &&
         a->certified_ht == b->certified_ht && a->floor_o == b->floor_o && a->floor_ht == b->floor_ht;
}

static int same_dd_cert(const oracle_dd_certificate *a, const oracle_dd_certificate *b) {
  return a->precision_bits == b->precision_bits && a->check_bits == b->check_bits &&
         a->certified_bits == b->certified_bits && a->certified_o == b->certified_o &&
         a->certified_ht == b->certified_ht && a->normwise_bits == b->normwise_bits &&
         a->floor_o == b->floor_o && a->floor_ht == b->floor_ht && a->guaranteed_bits == b->guaranteed_bits &&
         a->guaranteed_o == b->guaranteed_o && a->guaranteed_ht == b->guaranteed_ht &&
         a->guaranteed_normwise == b->guaranteed_normwise && a->bound_violations == b->bound_violations &&
         a->sample_columns == b->sample_columns && a->sampled_columns == b->sampled_columns &&
         a->total_columns == b->total_columns;
}

/* The splits every test runs: round-robin over 1, 2, 4 and 7 parts (7 >
 * 6 heads: a part with none), and an irregular one. */
static int n_splits(void) { return 5; }
static split nth_split(int i) {
  static const int rr[] = {1, 2, 4, 7};
  if (i < 4) return round_robin(rr[i]);
  split s = {2, {{1, 0, 0, 0, 0, 1}, {0, 1, 1, 1, 1, 0}}};
  return s;
}

/* Every split of the heads (run_split, MPFR or dd as `dd` says) puts
 * together the whole run's outputs `whole`, and its merged tally gives the
 * whole run's certificate `cw` (an oracle_certificate or, dd, an
 * oracle_dd_certificate).  `what` `at` names the caller's case. */
static void splits_equal_whole(const gdn_inputs *in, const void *cfg, int dd, const gdn_outputs *whole,
                               const void *cw, const char *what, int at) {
  gdn_error e;
  gdn_error_init(&e);
  for (int si = 0; si < n_splits(); si++) {
    split sp = nth_split(si);
    gdn_outputs got;
    oracle_tally t;
    run_split(in, cfg, dd, &sp, &got, &t);
    ck_assert_msg(otu_identical(&got, whole), "%s %d, split %d: outputs differ", what, at, si);
    if (dd) {
      oracle_dd_certificate cp;
      ck_assert_int_eq(oracle_tally_dd_certificate(&t, &in->shape, cfg, &cp, &e), GDN_OK);
      ck_assert_msg(same_dd_cert(&cp, cw), "%s %d, split %d: certificate differs", what, at, si);
    } else {
      oracle_certificate cp;
      const oracle_certificate *w = cw;
      ck_assert_int_eq(oracle_tally_certificate(&t, cfg, &cp, &e), GDN_OK);
      ck_assert_msg(same_cert(&cp, w), "%s %d, split %d: certificate differs (%d vs %d bits)", what, at, si,
                    cp.certified_bits, w->certified_bits);
    }
    gdn_outputs_clear(&got);
    oracle_tally_clear(&t);
  }
}

/* 2 x 3 heads with Hk = 1 (grouped), Dv = 20 (the token form's blocks of
 * 8: the last partial), h0 and the in-kernel L2 norm. */
static const gdn_shape SHAPE = {2, 21, 1, 3, 12, 20};

START_TEST(mpfr_parts_equal_whole) {
  gdn_inputs in = tsu_inputs(SHAPE, GDN_SYNTH_H0, 41);
  const struct { oracle_form f; int64_t C; } forms[] = {{ORACLE_FORM_TOKEN, 0}, {ORACLE_FORM_CHUNKED, 8}};
  for (int fi = 0; fi < 2; fi++) {
    oracle_config cfg = otu_cfg(80, forms[fi].f, forms[fi].C);
    gdn_outputs whole;
    oracle_certificate cw;
    otu_run_cert(&in, &cfg, &whole, &cw);
    ck_assert_int_gt(cw.certified_bits, 60); /* a real certificate, not an empty one */
    splits_equal_whole(&in, &cfg, 0, &whole, &cw, "form", fi);
    gdn_outputs_clear(&whole);
  }
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(dd_parts_equal_whole) {
  gdn_inputs in = tsu_inputs(SHAPE, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 42);
  gdn_error e;
  gdn_error_init(&e);
  /* the sample with its bound checked; below 120 bits (unchecked, -1); none */
  const struct { long prec; int64_t ns; } cases[] = {{128, 2}, {100, 3}, {128, 0}};
  for (int ci = 0; ci < 3; ci++) {
    oracle_dd_config cfg;
    oracle_dd_config_init(&cfg);
    cfg.sample_prec = cases[ci].prec;
    cfg.sample_columns = cases[ci].ns;
    gdn_outputs whole;
    gdn_outputs_init(&whole);
    oracle_dd_certificate cw;
    ck_assert_int_eq(oracle_run_dd(&in, &cfg, &whole, &cw, &e), GDN_OK);
    ck_assert_int_gt(cw.guaranteed_bits, 40);
    /* a real certificate: dd's ~106 bits meet a check at 100 or 128 bits
     * (measured 86 at 100, the check's own accuracy, and above 100 at 128) */
    if (cases[ci].ns) ck_assert_int_gt(cw.certified_bits, 80);
    splits_equal_whole(&in, &cfg, 1, &whole, &cw, "case", ci);
    gdn_outputs_clear(&whole);
  }
  gdn_inputs_clear(&in);
}
END_TEST

/* The tallies themselves: every split's merge equals the one-part tally
 * byte for byte (stronger than the certificate, which reads a few of
 * them).  Negative control: part 1 computing part 0's heads (heads 0, 2, 4
 * twice, 1, 3, 5 never) gives outputs and a tally that differ from the
 * whole run's, so the comparisons used above can fail. */
START_TEST(tally_exact_and_wrong_split_caught) {
  gdn_inputs in = tsu_inputs(SHAPE, GDN_SYNTH_H0, 43);
  oracle_config cfg = otu_cfg(72, ORACLE_FORM_TOKEN, 0);
  split one = round_robin(1), wrong = round_robin(2);
  memcpy(wrong.mask[1], wrong.mask[0], NH);
  gdn_outputs whole, got, bad;
  oracle_tally tw, tg, tb;
  run_split(&in, &cfg, 0, &one, &whole, &tw);
  for (int si = 1; si < n_splits(); si++) {
    split sp = nth_split(si);
    run_split(&in, &cfg, 0, &sp, &got, &tg);
    ck_assert_msg(same_tally(&tg, &tw), "split %d: tally differs", si);
    gdn_outputs_clear(&got);
    oracle_tally_clear(&tg);
  }
  run_split(&in, &cfg, 0, &wrong, &bad, &tb);
  ck_assert_msg(!otu_identical(&bad, &whole), "a split missing heads 1, 3, 5 went unnoticed (outputs)");
  ck_assert_msg(!same_tally(&tb, &tw), "a split missing heads 1, 3, 5 went unnoticed (tally)");
  gdn_outputs_clear(&whole);
  gdn_outputs_clear(&bad);
  oracle_tally_clear(&tw);
  oracle_tally_clear(&tb);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(mismatched_tallies_refused) {
  gdn_error e;
  gdn_error_init(&e);
  oracle_tally a, b;
  oracle_tally_init(&a);
  oracle_tally_init(&b);
  ck_assert_int_eq(oracle_tally_alloc(&a, ORACLE_TALLY_MPFR, 80, -1, &e), GDN_OK);
  ck_assert_int_eq(oracle_tally_alloc(&b, ORACLE_TALLY_MPFR, 96, -1, &e), GDN_OK);
  ck_assert_int_eq(oracle_tally_merge(&a, &b, &e), GDN_ERR_INTERNAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "mpfr tally of 96 buckets where mpfr of 80"));
  ck_assert_int_eq(oracle_tally_alloc(&b, ORACLE_TALLY_DD, ORACLE_DD_BITS, 0, &e), GDN_OK);
  ck_assert_int_eq(oracle_tally_merge(&a, &b, &e), GDN_ERR_INTERNAL);
  oracle_config cfg = otu_cfg(80, ORACLE_FORM_TOKEN, 0);
  oracle_certificate c;
  ck_assert_int_eq(oracle_tally_certificate(&b, &cfg, &c, &e), GDN_ERR_INTERNAL);
  ck_assert_int_eq(oracle_tally_alloc(&a, 7, 80, 0, &e), GDN_ERR_INTERNAL);
  ck_assert_uint_eq(oracle_tally_size(ORACLE_TALLY_MPFR, 0), 0);
  oracle_tally_clear(&a);
  oracle_tally_clear(&b);
}
END_TEST

/* Gates of 800 overflow binary64's exp at head 4 (b 1, j 1; t = 5) and
 * head 5 (b 1, j 2; t = 2).  The whole dd run names head 4 (the first in
 * (b, j) order); a part holding head 4 says the same, with failed_head 4;
 * a part holding only head 5 fails with failed_head 5; a part holding
 * neither succeeds. */
START_TEST(errors_name_their_head) {
  gdn_inputs in = tsu_inputs(SHAPE, 0, 44);
  gdn_error ew, ep;
  otu_plant_dd_overflow(&in, &ew);
  gdn_error_init(&ep);
  oracle_dd_config cfg;
  oracle_dd_config_init(&cfg);
  gdn_outputs out;
  gdn_outputs_init(&out);
  const unsigned char both[NH] = {0, 0, 0, 0, 1, 1}, five[NH] = {0, 0, 0, 0, 0, 1}, none[NH] = {1, 1, 1, 1, 0, 0};
  oracle_tally t;
  oracle_tally_init(&t);
  ck_assert_int_eq(oracle_run_dd_part(&in, &cfg, both, &out, &t, &ep), GDN_ERR_INPUT);
  ck_assert_str_eq(ep.msg, ew.msg);
  ck_assert_int_eq(t.failed_head, 4);
  ck_assert_ptr_null(out.o);
  ck_assert_int_eq(oracle_run_dd_part(&in, &cfg, five, &out, &t, &ep), GDN_ERR_INPUT);
  ck_assert_int_eq(t.failed_head, 5);
  ck_assert_ptr_nonnull(strstr(ep.msg, "b=1, value head 2, token t=2"));
  ck_assert_int_eq(oracle_run_dd_part(&in, &cfg, none, &out, &t, &ep), GDN_OK);
  ck_assert_int_eq(t.failed_head, -1);
  /* not a head's error: the config */
  cfg.sample_columns = -1;
  ck_assert_int_eq(oracle_run_dd_part(&in, &cfg, none, &out, &t, &ep), GDN_ERR_INPUT);
  ck_assert_int_eq(t.failed_head, -1);
  ck_assert_ptr_null(t.v);
  gdn_outputs_clear(&out);
  oracle_tally_clear(&t);
  gdn_inputs_clear(&in);
}
END_TEST

/* The VJP: items (b, key head) with their G value heads.  2 x 2 items of
 * G = 2 value heads each. */
static const gdn_shape VSHAPE = {2, 13, 2, 4, 8, 12};

/* Item (b, kh) of src into dst: dq, dk rows of the key head; dv, dg,
 * dbeta, dh0 of its G value heads. */
static void copy_item(gdn_grads *dst, const gdn_grads *src, int64_t it) {
  const gdn_shape *s = &src->shape;
  const int64_t G = s->Hv / s->Hk, b = it / s->Hk, kh = it % s->Hk;
  for (int64_t t = 0; t < s->T; t++) {
    const size_t qk = (size_t)(((b * s->T + t) * s->Hk + kh) * s->Dk);
    memcpy(dst->dq + qk, src->dq + qk, (size_t)s->Dk * sizeof(double));
    memcpy(dst->dk + qk, src->dk + qk, (size_t)s->Dk * sizeof(double));
    const size_t hv = (size_t)((b * s->T + t) * s->Hv + kh * G);
    memcpy(dst->dv + hv * s->Dv, src->dv + hv * s->Dv, (size_t)(G * s->Dv) * sizeof(double));
    memcpy(dst->dg + hv, src->dg + hv, (size_t)G * sizeof(double));
    memcpy(dst->dbeta + hv, src->dbeta + hv, (size_t)G * sizeof(double));
  }
  const size_t h0 = (size_t)((b * s->Hv + kh * G) * s->Dk * s->Dv);
  memcpy(dst->dh0 + h0, src->dh0 + h0, (size_t)(G * s->Dk * s->Dv) * sizeof(double));
}

static int same_grads(const gdn_grads *a, const gdn_grads *b) {
  const gdn_shape *s = &a->shape;
  const size_t qk = gdn_shape_numel_qk(s), v = gdn_shape_numel_v(s), g = gdn_shape_numel_gate(s),
               h = gdn_shape_numel_state(s);
  return !memcmp(a->dq, b->dq, qk * sizeof(double)) && !memcmp(a->dk, b->dk, qk * sizeof(double)) &&
         !memcmp(a->dv, b->dv, v * sizeof(double)) && !memcmp(a->dg, b->dg, g * sizeof(double)) &&
         !memcmp(a->dbeta, b->dbeta, g * sizeof(double)) && !memcmp(a->dh0, b->dh0, h * sizeof(double));
}

/* Runs the parts (masks over the 4 items), assembles and merges. */
static void vjp_split(const gdn_inputs *in, const gdn_cotangents *ct, const void *cfg, int dd, int parts,
                      const unsigned char mask[][4], gdn_grads *out, oracle_tally *all) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_grads_init(out);
  ck_assert_int_eq(gdn_grads_alloc(out, &in->shape, GDN_DTYPE_F64, &e), GDN_OK);
  oracle_tally_init(all);
  for (int p = 0; p < parts; p++) {
    gdn_grads g;
    gdn_grads_init(&g);
    oracle_tally t;
    oracle_tally_init(&t);
    int rc = dd ? oracle_vjp_dd_part(in, ct, cfg, mask[p], &g, &t, &e) : oracle_vjp_part(in, ct, cfg, mask[p], &g, &t, &e);
    ck_assert_msg(rc == GDN_OK, "part %d: %s", p, e.msg);
    for (int it = 0; it < 4; it++)
      if (mask[p][it]) copy_item(out, &g, it);
    if (!all->v) {
      *all = t;
    } else {
      ck_assert_int_eq(oracle_tally_merge(all, &t, &e), GDN_OK);
      oracle_tally_clear(&t);
    }
    gdn_grads_clear(&g);
  }
}

START_TEST(vjp_parts_equal_whole) {
  gdn_inputs in = tsu_inputs(VSHAPE, GDN_SYNTH_H0, 45);
  gdn_cotangents ct = tsu_cotangents(&VSHAPE, 1, 45);
  gdn_error e;
  gdn_error_init(&e);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  cfg.prec = 80;
  gdn_grads whole;
  gdn_grads_init(&whole);
  oracle_vjp_certificate cw, cp;
  ck_assert_msg(oracle_vjp_certified(&in, &ct, &cfg, &whole, &cw, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_gt(cw.certified_bits, 50);
  static const unsigned char two[2][4] = {{1, 0, 1, 0}, {0, 1, 0, 1}}, odd[3][4] = {{0, 0, 0, 1}, {1, 1, 0, 0}, {0, 0, 1, 0}},
                             wrong[2][4] = {{1, 0, 1, 0}, {1, 0, 1, 0}};
  const struct { int n; const unsigned char (*m)[4]; } splits[] = {{2, two}, {3, odd}};
  for (int si = 0; si < 2; si++) {
    gdn_grads got;
    oracle_tally t;
    vjp_split(&in, &ct, &cfg, 0, splits[si].n, splits[si].m, &got, &t);
    ck_assert_int_eq(oracle_tally_vjp_certificate(&t, &cfg, &cp, &e), GDN_OK);
    ck_assert_msg(same_grads(&got, &whole), "split %d: gradients differ", si);
    ck_assert_msg(!memcmp(cp.certified, cw.certified, sizeof cw.certified) && cp.certified_bits == cw.certified_bits &&
                      !memcmp(cp.floor, cw.floor, sizeof cw.floor) && cp.check_bits == cw.check_bits,
                  "split %d: certificate differs", si);
    gdn_grads_clear(&got);
    oracle_tally_clear(&t);
  }
  /* negative control: items 1 and 3 never computed */
  gdn_grads bad;
  oracle_tally tb;
  vjp_split(&in, &ct, &cfg, 0, 2, wrong, &bad, &tb);
  ck_assert_msg(!same_grads(&bad, &whole), "a VJP split missing items 1, 3 went unnoticed");
  gdn_grads_clear(&bad);
  oracle_tally_clear(&tb);
  gdn_grads_clear(&whole);
  /* the dd tier's VJP: with its sample, and without (an empty tally) */
  for (int64_t ns = 2; ns >= 0; ns -= 2) {
    oracle_vjp_dd_config dc;
    oracle_vjp_dd_config_init(&dc);
    dc.sample_columns = ns;
    oracle_vjp_dd_certificate dw, dp;
    gdn_grads_init(&whole);
    ck_assert_msg(oracle_vjp_dd(&in, &ct, &dc, &whole, &dw, &e) == GDN_OK, "%s", e.msg);
    if (ns) ck_assert_int_gt(dw.certified_bits, 90);
    gdn_grads got;
    oracle_tally t;
    vjp_split(&in, &ct, &dc, 1, 3, odd, &got, &t);
    ck_assert_int_eq(oracle_tally_vjp_dd_certificate(&t, &in.shape, &dc, &dp, &e), GDN_OK);
    ck_assert_msg(same_grads(&got, &whole), "dd VJP, %lld sampled: gradients differ", (long long)ns);
    ck_assert_msg(!memcmp(&dp, &dw, sizeof dw), "dd VJP, %lld sampled: certificate differs", (long long)ns);
    gdn_grads_clear(&got);
    gdn_grads_clear(&whole);
    oracle_tally_clear(&t);
  }
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
}
END_TEST

int main(void) {
  gdn_threads_set(2);
  Suite *su = suite_create("oracle_part");
  CKR_TCASE(su, "part", 120, mpfr_parts_equal_whole, dd_parts_equal_whole, tally_exact_and_wrong_split_caught,
      mismatched_tallies_refused, errors_name_their_head, vjp_parts_equal_whole);
  return ckr_run(su);
}
