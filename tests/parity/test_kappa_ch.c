/* kappa_G per key channel (parity_kappa_ch.h): its value on a hand-made
 * gate against the sum written out term by term; the channel made fast
 * (g = -1 per token, |G| large while the decays still count) among slow
 * ones is named the worst, in every position; the negative controls: the
 * same channel made much faster (g = -60: its decays vanish) or much
 * slower is no longer named, and equal channels give channel 0 with the
 * median's value; bad arguments refused; the KDA sweep's chunked cases
 * carry the worst channel in their JSON and a band that follows it,
 * which a planted sub-chunk mutant fails. */
#include <check.h>
#include <jansson.h>
#include <math.h>

#include "../check_runner.h"
#include "../test_util_synth.h"
#include "gdn_chgate.h"
#include "parity_kappa_ch.h"
#include "parity_recur_sweep.h"

static const gdn_shape SHAPE = {2, 150, 1, 2, 16, 8};

/* every channel slow (g = -1e-3), channel d at g_d (NaN: keep slow) */
static void fill(gdn_chgate *g, const gdn_shape *s, int64_t d, float gd) {
  gdn_error e;
  ck_assert(gdn_chgate_alloc(g, s, &e) == GDN_OK);
  for (size_t i = 0; i < gdn_chgate_numel(s); i++) g->g[i] = (int64_t)(i % (size_t)s->Dk) == d ? gd : -1e-3f;
}

static parity_kappa_ch kappa(const gdn_inputs *in, const gdn_chgate *g, int64_t C, int64_t D) {
  parity_kappa_ch k;
  gdn_error e;
  ck_assert_msg(parity_kappa_channels(in, g, C, D, &k, &e) == GDN_OK, "%s", e.msg);
  return k;
}

/* The measure of one constant-gate channel, term by term: G_i the float32
 * sum from the chunk's start, s_i = sum_{j<i} exp(G_i - G_j) + exp(G_i). */
static double by_hand(float g, int64_t T, int64_t C) {
  double sq = 0, A = 0, B = 0;
  float G[64];
  for (int64_t t = 0; t < T; t++) {
    const int64_t i = t % C;
    G[i] = i ? G[i - 1] + g : g;
    double s = exp((double)G[i]);
    for (int64_t j = 0; j < i; j++) s += exp((double)G[i] - (double)G[j]);
    const double m = fabs((double)G[i]) * s / (1 + s);
    sq += m * m;
    A = exp((double)g) * A + m;
    B = exp((double)g) * B + 1;
  }
  const double o = sqrt(sq / (double)T);
  return A / B > o ? A / B : o;
}

START_TEST(test_value_by_hand) {
  const gdn_shape s = {1, 100, 1, 1, 4, 4};
  gdn_inputs in = tsu_inputs(s, 0, 1);
  gdn_chgate g;
  gdn_chgate_init(&g);
  fill(&g, &s, 2, -0.7f);
  const parity_kappa_ch k = kappa(&in, &g, 32, 1);
  ck_assert_int_eq(k.worst_d, 2);
  const double want = by_hand(-0.7f, 100, 32);
  ck_assert_msg(fabs(k.worst - want) <= 1e-12 * want, "%.17g vs %.17g", k.worst, want);
  ck_assert(k.worst > 5); /* |G| up to 22 with half the decay mass: not small */
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(test_fast_channel_named) {
  gdn_inputs in = tsu_inputs(SHAPE, 0, 2);
  gdn_chgate g;
  gdn_chgate_init(&g);
  for (int64_t d = 0; d < SHAPE.Dk; d++) {
    fill(&g, &SHAPE, d, -1.0f);
    const parity_kappa_ch k = kappa(&in, &g, 64, 1);
    ck_assert_int_eq(k.worst_d, d);
    ck_assert_msg(k.worst > 100 * k.median, "channel %lld: %g vs median %g", (long long)d, k.worst, k.median);
    const parity_kappa_ch k2 = kappa(&in, &g, 64, 2); /* the affine's shards: still that channel */
    ck_assert_int_eq(k2.worst_d, d);
  }
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
}
END_TEST

/* Negative controls: much faster (decays vanish) or much slower is not
 * the worst; all channels alike: channel 0, the median's value. */
START_TEST(test_controls) {
  gdn_inputs in = tsu_inputs(SHAPE, 0, 3);
  gdn_chgate g;
  gdn_chgate_init(&g);
  fill(&g, &SHAPE, 5, -1.0f);
  const double fast = kappa(&in, &g, 64, 1).worst;
  fill(&g, &SHAPE, 5, -60.0f);
  parity_kappa_ch k = kappa(&in, &g, 64, 1);
  ck_assert_msg(k.worst < fast / 100, "g = -60: %g (g = -1: %g)", k.worst, fast);
  ck_assert_int_ne(k.worst_d, 5);
  fill(&g, &SHAPE, 5, -1e-6f);
  k = kappa(&in, &g, 64, 1);
  ck_assert_int_ne(k.worst_d, 5);
  fill(&g, &SHAPE, -1, 0);
  k = kappa(&in, &g, 64, 1);
  ck_assert_int_eq(k.worst_d, 0);
  ck_assert(k.worst == k.median && k.worst > 0);
  gdn_error e;
  ck_assert_int_eq(parity_kappa_channels(&in, &g, 0, 1, &k, &e), GDN_ERR_INPUT);
  ck_assert_int_eq(parity_kappa_channels(&in, &g, 64, 0, &k, &e), GDN_ERR_INPUT);
  gdn_chgate_clear(&g);
  ck_assert_int_eq(parity_kappa_channels(&in, &g, 64, 1, &k, &e), GDN_ERR_INPUT); /* no gate */
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(test_sweep_json) {
  gdn_error e;
  const parity_recurrence *r = parity_recurrence_find("kda", &e);
  ck_assert(r);
  parity_recur_opts o;
  parity_recur_opts_init(&o, r);
  o.shape = (gdn_shape){1, 64, 1, 1, 8, 8};
  o.dd = 1;
  o.n_devices = 2;
  json_t *doc;
  int pass;
  ck_assert_msg(parity_recur_sweep(&o, &doc, &pass, &e) == GDN_OK, "%s", e.msg);
  json_t *cases = json_object_get(doc, "cases");
  ck_assert_int_eq((int)json_array_size(cases), 4);
  ck_assert(pass);
  ck_assert(json_is_null(json_object_get(json_array_get(cases, 0), "kappa_g"))); /* the token loop */
  ck_assert(json_real_value(json_object_get(json_array_get(cases, 0), "band")) == 0x1p-24 * PARITY_RECUR_KAPPA_F);
  for (size_t i = 1; i < 4; i++) {
    json_t *c = json_array_get(cases, i), *k = json_object_get(c, "kappa_g");
    const json_int_t d = json_integer_value(json_object_get(k, "worst_channel"));
    const double kv = json_real_value(json_object_get(k, "value"));
    ck_assert(d >= 0 && d < 8);
    ck_assert(kv >= json_real_value(json_object_get(k, "median_channel")) && kv > 0);
    /* the band follows kappa: u (C_K kappa + F) */
    ck_assert(json_real_value(json_object_get(c, "band")) ==
              0x1p-24 * (PARITY_RECUR_KAPPA_C * kv + PARITY_RECUR_KAPPA_F));
  }
  json_decref(doc);
  /* negative control: a sub-chunk boundary off by one fails that band */
  o.mutant = parity_recurrence_mutant(r, "subchunk-off-by-one", &e);
  ck_assert(o.mutant > 0);
  ck_assert_msg(parity_recur_sweep(&o, &doc, &pass, &e) == GDN_OK, "%s", e.msg);
  ck_assert(!pass);
  json_decref(doc);
}
END_TEST

int main(void) {
  Suite *su = suite_create("parity");
  TCase *tc = tcase_create("kappa_ch");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_value_by_hand);
  tcase_add_test(tc, test_fast_channel_named);
  tcase_add_test(tc, test_controls);
  tcase_add_test(tc, test_sweep_json);
  suite_add_tcase(su, tc);
  return ckr_run(su);
}
