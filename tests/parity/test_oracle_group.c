/* parity_group_oracle: the reference of a run streamed by head group.  For
 * each tier (MPFR, dd) with and without gradients: the groups' inputs drawn
 * alone (gdn_synth_generate_heads), the oracle run group by group, give
 * outputs and gradients equal bit for bit to the whole run's slabs, and a
 * merged certificate whose every field is the whole run's (groups of 1 and
 * 2 key heads, B = 2, GQA 2:1).  Negative control: an error planted in the
 * oracle's state at a sampled column of a head other than the first is
 * seen by the whole run's certificate and by the streamed one (the sample
 * placed by the whole run's head index); the same run with the placement
 * dropped samples other columns and misses it. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "gdn_synth.h"
#include "oracle.h"
#include "parity_oracle_group.h"

static const gdn_shape S = {2, 40, 2, 4, 8, 8};
static const gdn_synth_opts SO = {11, GDN_SYNTH_H0, 0};

/* Group tensor g (heads [h0, h0 + hg) of H along the axis with `outer`
 * entries before and `inner` values after it) equals the whole's slab. */
static int slab_equal(const double *w, const double *g, int64_t outer, int64_t H, int64_t h0, int64_t hg,
                      int64_t inner) {
  for (int64_t j = 0; j < outer; j++)
    if (memcmp(g + j * hg * inner, w + (j * H + h0) * inner, (size_t)(hg * inner) * sizeof *g)) return 0;
  return 1;
}

static int same_cert(const parity_reference *a, const parity_reference *b) {
  return a->tier == b->tier && a->requested == b->requested && a->precision_bits == b->precision_bits &&
         a->check_bits == b->check_bits && a->certified_bits == b->certified_bits &&
         a->normwise_bits == b->normwise_bits && a->guaranteed_bits == b->guaranteed_bits &&
         a->bound_violations == b->bound_violations && a->sampled_columns == b->sampled_columns &&
         a->total_columns == b->total_columns && !memcmp(&a->mpfr_cost, &b->mpfr_cost, sizeof a->mpfr_cost) &&
         a->has_grads == b->has_grads && a->grad_tier == b->grad_tier &&
         a->grad_certified_bits == b->grad_certified_bits && a->grad_normwise_bits == b->grad_normwise_bits &&
         !strcmp(a->form ? a->form : "", b->form ? b->form : "");
}

/* The whole run's reference (and gradients with ct). */
static void whole_ref(const gdn_inputs *in, const gdn_cotangents *ct, parity_oracle_tier t, parity_reference *r) {
  gdn_error e;
  gdn_error_init(&e);
  parity_reference_init(r);
  ck_assert_int_eq(parity_reference_compute(r, in, t, 128, &e), GDN_OK);
  if (ct) ck_assert_int_eq(parity_reference_compute_grads(r, in, ct, t, 128, &e), GDN_OK);
}

/* The streamed run with groups of gs key heads; each group's outputs
 * checked against the whole's slabs; the finished certificate in *fin. */
static void streamed(const parity_reference *w, int grads, parity_oracle_tier t, int64_t gs, parity_reference *fin) {
  gdn_error e;
  gdn_error_init(&e);
  parity_group_oracle go;
  parity_group_oracle_init(&go, &S, t, 128, grads);
  const int64_t r = S.Hv / S.Hk;
  for (int64_t k0 = 0; k0 < S.Hk; k0 += gs) {
    const int64_t k1 = k0 + gs < S.Hk ? k0 + gs : S.Hk, v0 = k0 * r, hv = (k1 - k0) * r;
    gdn_inputs g;
    gdn_inputs_init(&g);
    ck_assert_int_eq(gdn_synth_generate_heads(&g, &S, k0, k1, &SO, &e), GDN_OK);
    gdn_cotangents c;
    gdn_cotangents_init(&c);
    if (grads) {
      ck_assert_int_eq(gdn_cotangents_alloc(&c, &g.shape, 1, &e), GDN_OK);
      gdn_cotangents_synth_heads(&c, S.Hv, v0, 3);
    }
    parity_reference gr;
    parity_reference_init(&gr);
    ck_assert_msg(parity_group_oracle_run(&go, &g, k0, grads ? &c : NULL, &gr, &e) == GDN_OK, "%s", e.msg);
    ck_assert(slab_equal(w->out.o, gr.out.o, S.B * S.T, S.Hv, v0, hv, S.Dv));
    ck_assert(slab_equal(w->out.ht, gr.out.ht, S.B, S.Hv, v0, hv, S.Dk * S.Dv));
    if (grads) {
      ck_assert(slab_equal(w->grads.dq, gr.grads.dq, S.B * S.T, S.Hk, k0, k1 - k0, S.Dk));
      ck_assert(slab_equal(w->grads.dk, gr.grads.dk, S.B * S.T, S.Hk, k0, k1 - k0, S.Dk));
      ck_assert(slab_equal(w->grads.dv, gr.grads.dv, S.B * S.T, S.Hv, v0, hv, S.Dv));
      ck_assert(slab_equal(w->grads.dg, gr.grads.dg, S.B * S.T, S.Hv, v0, hv, 1));
      ck_assert(slab_equal(w->grads.dbeta, gr.grads.dbeta, S.B * S.T, S.Hv, v0, hv, 1));
      ck_assert(slab_equal(w->grads.dh0, gr.grads.dh0, S.B, S.Hv, v0, hv, S.Dk * S.Dv));
    }
    parity_reference_clear(&gr);
    gdn_cotangents_clear(&c);
    gdn_inputs_clear(&g);
  }
  parity_reference_init(fin);
  ck_assert_msg(parity_group_oracle_finish(&go, fin, &e) == GDN_OK, "%s", e.msg);
  parity_group_oracle_clear(&go);
}

START_TEST(groups_give_the_whole_run) {
  static const parity_oracle_tier tiers[2] = {PARITY_ORACLE_MPFR, PARITY_ORACLE_DD};
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs in;
  gdn_inputs_init(&in);
  ck_assert_int_eq(gdn_synth_generate(&in, &S, &SO, &e), GDN_OK);
  gdn_cotangents ct;
  gdn_cotangents_init(&ct);
  ck_assert_int_eq(gdn_cotangents_alloc(&ct, &S, 1, &e), GDN_OK);
  gdn_cotangents_synth(&ct, 3);
  for (int ti = 0; ti < 2; ti++)
    for (int grads = 0; grads < 2; grads++) {
      parity_reference w, fin;
      whole_ref(&in, grads ? &ct : NULL, tiers[ti], &w);
      for (int64_t gs = 1; gs <= 2; gs++) {
        streamed(&w, grads, tiers[ti], gs, &fin);
        ck_assert_msg(same_cert(&fin, &w), "tier %d grads %d groups of %lld: certified %d/%d normwise %d/%d "
                      "guaranteed %d/%d grad %d/%d", ti, grads, (long long)gs, fin.certified_bits, w.certified_bits,
                      fin.normwise_bits, w.normwise_bits, fin.guaranteed_bits, w.guaranteed_bits,
                      fin.grad_certified_bits, w.grad_certified_bits);
        parity_reference_clear(&fin);
      }
      parity_reference_clear(&w);
    }
  gdn_cotangents_clear(&ct);
  gdn_inputs_clear(&in);
}
END_TEST

/* The dd forward of group 1 (value heads 2, 3) with the sample placed or
 * not, an error planted at one of its heads' whole-run sample columns. */
START_TEST(sample_placed_by_the_whole_run) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs in, g;
  gdn_inputs_init(&in);
  gdn_inputs_init(&g);
  ck_assert_int_eq(gdn_synth_generate(&in, &S, &SO, &e), GDN_OK);
  ck_assert_int_eq(gdn_synth_generate_heads(&g, &S, 1, 2, &SO, &e), GDN_OK);
  /* a head of the group whose whole-run sample and own-index sample do
   * not overlap (the hash decides which) */
  const int64_t ns = 2;
  int64_t pb = -1, pj = -1, placed = 0, unplaced = 0;
  for (int64_t b = 0; b < S.B && pb < 0; b++)
    for (int64_t j = 0; j < 2 && pb < 0; j++) {
      placed = oracle_dd_sample_start_in(&g.shape, ns, b, j, 2, S.Hv);
      unplaced = oracle_dd_sample_start(&g.shape, ns, b, j);
      ck_assert_int_eq(placed, oracle_dd_sample_start(&S, ns, b, 2 + j)); /* the whole run's head */
      if (placed + ns <= unplaced || unplaced + ns <= placed) pb = b, pj = j;
    }
  ck_assert_msg(pb >= 0, "the control needs a head whose samples differ");
  oracle_dd_config cfg;
  oracle_dd_config_init(&cfg);
  cfg.sample_columns = ns;
  gdn_outputs out;
  gdn_outputs_init(&out);
  oracle_dd_certificate cert, wc;
  ck_assert_int_eq(oracle_run_dd(&in, &cfg, &out, &wc, &e), GDN_OK);
  const int clean_bits = wc.certified_bits;
  oracle_dd_test_plant(pb, 2 + pj, placed, 20, 0x1p-60); /* the whole run's (b, head) */
  ck_assert_int_eq(oracle_run_dd(&in, &cfg, &out, &wc, &e), GDN_OK);
  ck_assert_msg(wc.certified_bits < clean_bits && wc.bound_violations > 0, "the planted error must show: %d vs %d",
                wc.certified_bits, clean_bits);
  oracle_dd_test_plant(pb, pj, placed, 20, 0x1p-60); /* the group's head pj is head 2 + pj */
  for (int place = 0; place < 2; place++) {
    if (place) cfg.head0 = 2, cfg.whole_hv = S.Hv;
    oracle_tally t;
    oracle_tally_init(&t);
    ck_assert_int_eq(oracle_run_dd_part(&g, &cfg, NULL, &out, &t, &e), GDN_OK);
    ck_assert_int_eq(oracle_tally_dd_certificate(&t, &g.shape, &cfg, &cert, &e), GDN_OK);
    if (place) ck_assert_msg(cert.certified_bits <= wc.certified_bits && cert.bound_violations > 0,
                             "placed: %d bits, %lld violations", cert.certified_bits, (long long)cert.bound_violations);
    else ck_assert_msg(cert.certified_bits > wc.certified_bits && cert.bound_violations == 0,
                       "unplaced sample saw it: %d bits", cert.certified_bits);
    oracle_tally_clear(&t);
  }
  oracle_dd_test_plant(0, 0, -1, 0, 0);
  /* a placement past the whole run is refused, naming it */
  cfg.head0 = 3, cfg.whole_hv = S.Hv;
  ck_assert_int_eq(oracle_run_dd(&g, &cfg, &out, &cert, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "whole_hv") != NULL, "%s", e.msg);
  cfg.head0 = 1, cfg.whole_hv = 0;
  ck_assert_int_eq(oracle_dd_config_validate(&cfg, &e), GDN_ERR_INPUT);
  gdn_outputs_clear(&out);
  gdn_inputs_clear(&g);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("oracle_group", "oracle_group", 300, groups_give_the_whole_run, sample_placed_by_the_whole_run)
