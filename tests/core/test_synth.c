#include <check.h>
#include <math.h>
#include <string.h>

#include "gdn_bf16.h"
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

CKR_MAIN("synth", "synth", 0, deterministic_across_threads_and_seeds, pinned_hashes_across_threads, distributions,
    prenorm_and_bf16)
