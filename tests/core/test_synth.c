#include <check.h>
#include <math.h>
#include <string.h>

#include "gdn_bf16.h"
#include "gdn_prelude.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "../check_runner.h"


static void gen(gdn_inputs *in, const gdn_shape *s, unsigned flags, unsigned bm, uint64_t seed) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  gdn_synth_opts o = {seed, flags, bm};
  ck_assert_int_eq(gdn_synth_generate(in, s, &o, &e), GDN_OK);
}

/* FNV-1a 64 over the bytes of the five tensors, in a fixed order. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t inputs_hash(const gdn_inputs *in, const gdn_shape *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv(h, in->q, gdn_shape_numel_qk(s) * 4);
  h = fnv(h, in->k, gdn_shape_numel_qk(s) * 4);
  h = fnv(h, in->v, gdn_shape_numel_v(s) * 4);
  h = fnv(h, in->g, gdn_shape_numel_gate(s) * 4);
  return fnv(h, in->beta, gdn_shape_numel_gate(s) * 4);
}

/* Large enough that every fill really splits over 2 threads (one thread per
 * 4096 elements), for each synthesis mode: the bytes are the same at 1 and 2
 * threads and equal to hashes pinned from the commit before the speed work
 * (the synthetic inputs never change silently: every stored result and
 * fixture comparison depends on them). */
START_TEST(pinned_hashes_across_threads) {
  gdn_shape s = {1, 1024, 2, 2, 16, 16};
  static const struct { unsigned flags; uint64_t want; } mode[] = {
      /* computed at 2084ecb (main before the speed work) and unchanged since */
      {0, 0xcceb63007b227118ull}, {GDN_SYNTH_SLOW_GATES, 0x76f5d1d52fc8428eull}, {GDN_SYNTH_QK_PRENORM, 0xaf3d4d5cc6b501a4ull}, {GDN_SYNTH_PRELUDE_BF16, 0xa3c4ee40e5a3a1c0ull}};
  for (size_t m = 0; m < sizeof mode / sizeof mode[0]; m++) {
    uint64_t h[2];
    for (int th = 1; th <= 2; th++) {
      gdn_inputs in;
      gdn_threads_set(th);
      gen(&in, &s, mode[m].flags, 0, 7);
      h[th - 1] = inputs_hash(&in, &s);
      gdn_inputs_clear(&in);
    }
    ck_assert_msg(h[0] == h[1], "mode %zu: 1 and 2 threads differ", m);
    ck_assert_msg(h[0] == mode[m].want, "mode %zu: hash %#018llx, pinned %#018llx", m,
                  (unsigned long long)h[0], (unsigned long long)mode[m].want);
  }
  /* Negative control: another seed changes the hash. */
  gdn_inputs in;
  gen(&in, &s, 0, 0, 8);
  ck_assert(inputs_hash(&in, &s) != mode[0].want);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(deterministic_across_threads_and_seeds) {
  gdn_shape s = {2, 37, 2, 4, 8, 6};
  gdn_inputs a, b, c;
  gdn_threads_set(1);
  gen(&a, &s, GDN_SYNTH_H0, 0, 5);
  gdn_threads_set(2);
  gen(&b, &s, GDN_SYNTH_H0, 0, 5);
  gen(&c, &s, GDN_SYNTH_H0, 0, 6);
  ck_assert_mem_eq(a.q, b.q, gdn_shape_numel_qk(&s) * 4);
  ck_assert_mem_eq(a.v, b.v, gdn_shape_numel_v(&s) * 4);
  ck_assert_mem_eq(a.g, b.g, gdn_shape_numel_gate(&s) * 4);
  ck_assert_mem_eq(a.h0, b.h0, gdn_shape_numel_state(&s) * 4);
  ck_assert(memcmp(a.q, c.q, gdn_shape_numel_qk(&s) * 4) != 0);
  gdn_inputs_clear(&a);
  gdn_inputs_clear(&b);
  gdn_inputs_clear(&c);
}
END_TEST

/* The gates look like a Qwen 3.5 layer: beta in (0, 1), g < 0, per-head decay
 * rate A in (0, 16) so g / softplus(...) is constant over t for a head. */
START_TEST(distributions) {
  gdn_shape s = {1, 4000, 1, 3, 16, 16};
  gdn_inputs in;
  gen(&in, &s, 0, 0, 1);
  ck_assert_int_eq(in.l2norm_in_kernel, 1);
  ck_assert_ptr_null(in.h0);
  double mean_v = 0, var_v = 0;
  size_t nv = gdn_shape_numel_v(&s);
  for (size_t i = 0; i < nv; i++) mean_v += in.v[i];
  mean_v /= nv;
  for (size_t i = 0; i < nv; i++) var_v += (in.v[i] - mean_v) * (in.v[i] - mean_v);
  var_v /= nv;
  /* 192000 samples: mean within 5 sigma (5/sqrt(n) = 0.011), variance within 3 %. */
  ck_assert_msg(fabs(mean_v) < 0.012 && fabs(var_v - 1) < 0.03, "v mean %g var %g", mean_v, var_v);
  for (size_t i = 0; i < gdn_shape_numel_gate(&s); i++) {
    ck_assert(in.beta[i] > 0 && in.beta[i] < 1);
    ck_assert(in.g[i] < 0 && in.g[i] > -16 * 60);
  }
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(prenorm_and_bf16) {
  gdn_shape s = {1, 10, 2, 2, 32, 8};
  gdn_inputs in;
  gen(&in, &s, GDN_SYNTH_QK_PRENORM, GDN_T_Q | GDN_T_K | GDN_T_V, 3);
  ck_assert_int_eq(in.l2norm_in_kernel, 0);
  for (size_t r = 0; r < gdn_shape_numel_qk(&s) / 32; r++) {
    double n2 = 0;
    for (int i = 0; i < 32; i++) n2 += (double)in.k[r * 32 + i] * in.k[r * 32 + i];
    /* bf16 rounding of 32 entries: |n2 - 1| <= 2 * 2^-8 relative, plus eps. */
    ck_assert_msg(fabs(n2 - 1) < 1e-2, "row %zu norm^2 %g", r, n2);
  }
  for (size_t i = 0; i < gdn_shape_numel_v(&s); i++) ck_assert(in.v[i] == gdn_bf16_round(in.v[i]));
  ck_assert_uint_eq(in.bf16_mask, GDN_T_Q | GDN_T_K | GDN_T_V);
  gdn_inputs_clear(&in);
}
END_TEST

/* Heads [h0, h1) of a whole (outer, H, D) tensor against a group's
 * (outer, h1 - h0, D) one: the first differing element's group index, or -1. */
static long slab_diff(const float *whole, const float *grp, size_t outer, int64_t H, size_t D, int64_t h0,
                      int64_t h1) {
  const size_t len = (size_t)(h1 - h0) * D;
  for (size_t j = 0; j < outer; j++)
    if (memcmp(whole + j * (size_t)H * D + (size_t)h0 * D, grp + j * len, len * sizeof(float)))
      for (size_t i = 0; i < len; i++)
        if (memcmp(whole + j * (size_t)H * D + (size_t)h0 * D + i, grp + j * len + i, sizeof(float)))
          return (long)(j * len + i);
  return -1;
}

/* Every tensor of a head group (q, k, v, g, beta, h0, the prelude's seven)
 * against its slab of the whole generation, or the first that differs. */
static const char *group_diff(const gdn_inputs *w, const gdn_inputs *g, int64_t k0, int64_t k1) {
  const gdn_shape *s = &w->shape;
  const int64_t r = s->Hv / s->Hk, v0 = k0 * r, v1 = k1 * r;
  const size_t bt = (size_t)(s->B * s->T);
  if (g->shape.Hk != k1 - k0 || g->shape.Hv != v1 - v0 || g->shape.T != s->T) return "shape";
  if (slab_diff(w->q, g->q, bt, s->Hk, (size_t)s->Dk, k0, k1) >= 0) return "q";
  if (slab_diff(w->k, g->k, bt, s->Hk, (size_t)s->Dk, k0, k1) >= 0) return "k";
  if (slab_diff(w->v, g->v, bt, s->Hv, (size_t)s->Dv, v0, v1) >= 0) return "v";
  if (slab_diff(w->g, g->g, bt, s->Hv, 1, v0, v1) >= 0) return "g";
  if (slab_diff(w->beta, g->beta, bt, s->Hv, 1, v0, v1) >= 0) return "beta";
  if (!w->h0 != !g->h0) return "h0 presence";
  if (w->h0 && slab_diff(w->h0, g->h0, (size_t)s->B, s->Hv, (size_t)(s->Dk * s->Dv), v0, v1) >= 0) return "h0";
  if (!w->prelude != !g->prelude) return "prelude presence";
  if (w->l2norm_in_kernel != g->l2norm_in_kernel || w->bf16_mask != g->bf16_mask) return "flags";
  if (!w->prelude) return NULL;
  const float *const *pw = (const float *const *)w->prelude->t, *const *pg = (const float *const *)g->prelude->t;
  if (slab_diff(pw[GDN_PRELUDE_Q], pg[GDN_PRELUDE_Q], bt, s->Hk, (size_t)s->Dk, k0, k1) >= 0) return "prelude q";
  if (slab_diff(pw[GDN_PRELUDE_K], pg[GDN_PRELUDE_K], bt, s->Hk, (size_t)s->Dk, k0, k1) >= 0) return "prelude k";
  if (slab_diff(pw[GDN_PRELUDE_V], pg[GDN_PRELUDE_V], bt, s->Hv, (size_t)s->Dv, v0, v1) >= 0) return "prelude v";
  if (slab_diff(pw[GDN_PRELUDE_A], pg[GDN_PRELUDE_A], bt, s->Hv, 1, v0, v1) >= 0) return "prelude a";
  if (slab_diff(pw[GDN_PRELUDE_B], pg[GDN_PRELUDE_B], bt, s->Hv, 1, v0, v1) >= 0) return "prelude b";
  if (slab_diff(pw[GDN_PRELUDE_A_LOG], pg[GDN_PRELUDE_A_LOG], 1, s->Hv, 1, v0, v1) >= 0) return "prelude A_log";
  if (slab_diff(pw[GDN_PRELUDE_DT_BIAS], pg[GDN_PRELUDE_DT_BIAS], 1, s->Hv, 1, v0, v1) >= 0) return "prelude dt_bias";
  return NULL;
}

/* A run streamed by head group draws each group's inputs alone: every
 * group, for group sizes 1 .. Hk (a short last group included), is bit for
 * bit its slab of the whole generation, in every synthesis mode, GQA (two
 * value heads per key head), B = 2, at 1 and 2 threads.  The whole
 * generation itself is pinned (pinned_hashes_across_threads).  Negative
 * control: a group compared with the neighbouring heads' slab differs, and
 * an empty or out-of-range head range is refused. */
START_TEST(head_groups_match_whole) {
  const gdn_shape s = {2, 300, 4, 8, 16, 8};
  static const struct { unsigned flags, bm; } mode[] = {
      {GDN_SYNTH_H0, 0}, {GDN_SYNTH_SLOW_GATES, GDN_T_G | GDN_T_BETA},
      {GDN_SYNTH_QK_PRENORM | GDN_SYNTH_H0, GDN_T_Q | GDN_T_K | GDN_T_V}, {GDN_SYNTH_PRELUDE_BF16, 0}};
  gdn_error e;
  gdn_error_init(&e);
  for (size_t m = 0; m < sizeof mode / sizeof mode[0]; m++)
    for (int th = 1; th <= 2; th++) {
      gdn_threads_set(th);
      gdn_inputs w;
      gen(&w, &s, mode[m].flags, mode[m].bm, 11);
      gdn_synth_opts o = {11, mode[m].flags, mode[m].bm};
      for (int64_t gs = 1; gs <= s.Hk; gs++)
        for (int64_t k0 = 0; k0 < s.Hk; k0 += gs) {
          const int64_t k1 = k0 + gs < s.Hk ? k0 + gs : s.Hk;
          gdn_inputs g;
          gdn_inputs_init(&g);
          ck_assert_int_eq(gdn_synth_generate_heads(&g, &s, k0, k1, &o, &e), GDN_OK);
          const char *d = group_diff(&w, &g, k0, k1);
          ck_assert_msg(!d, "mode %zu, %d threads, heads [%lld, %lld): %s differs", m, th, (long long)k0,
                        (long long)k1, d);
          if (k1 < s.Hk) /* negative control: the next heads' slab is other values */
            ck_assert_msg(group_diff(&w, &g, k0 + 1, k1 + 1) != NULL, "mode %zu: shifted slab matched", m);
          gdn_inputs_clear(&g);
        }
      gdn_inputs_clear(&w);
    }
  gdn_inputs g;
  gdn_inputs_init(&g);
  gdn_synth_opts o = {11, 0, 0};
  ck_assert_int_eq(gdn_synth_generate_heads(&g, &s, 2, 2, &o, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "key heads [2, 2)"));
  ck_assert_int_eq(gdn_synth_generate_heads(&g, &s, 3, 5, &o, &e), GDN_ERR_INPUT);
  ck_assert_ptr_null(g.q);
}
END_TEST

/* gdn_synth_range: any split of every tensor into ranges (whole rows for
 * pre-normalised q and k) gives the whole generation's values bit for bit,
 * in every mode the streamed harness hashes, at 1 and 2 threads.  Negative
 * control: a range drawn one element further on differs.  Refused: a range
 * past the end, a pre-normalised (or prelude) range of q or k that is not
 * whole rows, h0 without an initial state. */
START_TEST(ranges_match_whole) {
  const gdn_shape s = {2, 37, 3, 6, 8, 4};
  static const struct { unsigned flags, bm; } mode[] = {
      {GDN_SYNTH_H0, 0}, {GDN_SYNTH_SLOW_GATES, GDN_T_G | GDN_T_BETA},
      {GDN_SYNTH_QK_PRENORM | GDN_SYNTH_H0, GDN_T_Q | GDN_T_K | GDN_T_V},
      {GDN_SYNTH_PRELUDE_BF16 | GDN_SYNTH_H0, 0}};
  gdn_error e;
  gdn_error_init(&e);
  float buf[4096];
  for (size_t m = 0; m < sizeof mode / sizeof mode[0]; m++)
    for (int th = 1; th <= 2; th++) {
      gdn_threads_set(th);
      gdn_inputs w;
      gen(&w, &s, mode[m].flags, mode[m].bm, 5);
      const gdn_synth_opts o = {5, mode[m].flags, mode[m].bm};
      const float *whole[GDN_SYNTH_TN] = {w.q, w.k, w.v, w.g, w.beta, w.h0};
      for (int t = 0; t < GDN_SYNTH_TN; t++) {
        if (!whole[t]) continue; /* no h0 drawn */
        const size_t total = gdn_synth_numel(&s, t), step = (size_t)s.Dk * (size_t)(3 + t); /* whole rows */
        ck_assert_uint_le(total, sizeof buf / sizeof buf[0]);
        for (size_t at = 0; at < total; at += step) {
          const size_t n = total - at < step ? total - at : step;
          ck_assert_msg(gdn_synth_range(&s, &o, t, at, n, buf + at, &e) == GDN_OK, "%s", e.msg);
        }
        ck_assert_msg(!memcmp(buf, whole[t], total * sizeof *buf), "mode %zu, tensor %d: ranges differ", m, t);
        if (!(mode[m].flags & (GDN_SYNTH_QK_PRENORM | GDN_SYNTH_PRELUDE_BF16)) || t > GDN_SYNTH_TK) { /* control */
          ck_assert_int_eq(gdn_synth_range(&s, &o, t, 1, total - 1, buf, &e), GDN_OK);
          ck_assert_msg(memcmp(buf, whole[t], (total - 1) * sizeof *buf), "mode %zu, tensor %d: shifted matched", m, t);
        }
      }
      gdn_inputs_clear(&w);
    }
  const gdn_synth_opts plain = {5, 0, 0}, pre = {5, GDN_SYNTH_QK_PRENORM, 0}, prel = {5, GDN_SYNTH_PRELUDE_BF16, 0};
  const size_t nq = gdn_synth_numel(&s, GDN_SYNTH_TQ);
  ck_assert_int_eq(gdn_synth_range(&s, &plain, GDN_SYNTH_TQ, nq - 2, 3, buf, &e), GDN_ERR_INTERNAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "are not a range of q's"));
  ck_assert_int_eq(gdn_synth_range(&s, &plain, GDN_SYNTH_TQ, nq - 2, 2, buf, &e), GDN_OK); /* control */
  ck_assert_int_eq(gdn_synth_range(&s, &pre, GDN_SYNTH_TK, 3, 8, buf, &e), GDN_ERR_INTERNAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "in whole rows"));
  ck_assert_int_eq(gdn_synth_range(&s, &plain, GDN_SYNTH_TH0, 0, 1, buf, &e), GDN_ERR_INTERNAL);
  ck_assert_int_eq(gdn_synth_range(&s, &prel, GDN_SYNTH_TK, 3, 8, buf, &e), GDN_ERR_INTERNAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "in whole rows"));
  ck_assert_int_eq(gdn_synth_range(&s, &prel, GDN_SYNTH_TK, 8, 8, buf, &e), GDN_OK); /* control: whole rows */
  ck_assert_int_eq(gdn_synth_range(&s, &plain, GDN_SYNTH_TN, 0, 1, buf, &e), GDN_ERR_INTERNAL);
  ck_assert_uint_eq(gdn_synth_numel(&s, GDN_SYNTH_TN), 0);
}
END_TEST

CKR_MAIN("synth", "synth", 60, deterministic_across_threads_and_seeds, pinned_hashes_across_threads, distributions,
    prenorm_and_bf16, head_groups_match_whole, ranges_match_whole)
