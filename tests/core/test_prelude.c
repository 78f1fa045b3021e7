/* GDN_SYNTH_PRELUDE_BF16: the layer's bfloat16 prelude (gdn_synth.h).
 *   - every tensor holds bfloat16 values, all five marked, q and k
 *     normalised (l2norm_in_kernel 0), deterministic for any thread count;
 *   - q, k rows have norm 1 to bfloat16 accuracy (|norm - 1| < 2^-6: each
 *     element rounded (2^-9 relative), the factor rounded twice more);
 *     and they are not the exactly normalised rows rounded once (negative
 *     control: the prelude's roundings show in some elements);
 *   - g < 0 and beta in (0, 1) within 2^-7 relative of the binary64 formulas
 *     on the same bfloat16 activations and the same rounded a + dt_bias (the
 *     three roundings left, exp, softplus, the product: 3 x 2^-9). */
#include <check.h>
#include <math.h>
#include <string.h>

#include "gdn_bf16.h"
#include "gdn_rng.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "../check_runner.h"

static const gdn_shape S = {2, 50, 2, 4, 64, 32};

static void gen(gdn_inputs *in, unsigned flags) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  gdn_synth_opts o = {9, flags | GDN_SYNTH_PRELUDE_BF16, 0};
  ck_assert_int_eq(gdn_synth_generate(in, &S, &o, &e), GDN_OK);
}

static int all_bf16(const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (gdn_bf16_round(x[i]) != x[i]) return 0;
  return 1;
}

START_TEST(bf16_values_normalised_rows) {
  gdn_inputs a, b;
  gdn_threads_set(1);
  gen(&a, 0);
  gdn_threads_set(2);
  gen(&b, 0);
  ck_assert_mem_eq(a.k, b.k, gdn_shape_numel_qk(&S) * 4);
  ck_assert_mem_eq(a.g, b.g, gdn_shape_numel_gate(&S) * 4);
  ck_assert_int_eq(a.bf16_mask, GDN_T_Q | GDN_T_K | GDN_T_V | GDN_T_G | GDN_T_BETA);
  ck_assert_int_eq(a.l2norm_in_kernel, 0);
  ck_assert(all_bf16(a.q, gdn_shape_numel_qk(&S)) && all_bf16(a.k, gdn_shape_numel_qk(&S)));
  ck_assert(all_bf16(a.v, gdn_shape_numel_v(&S)));
  ck_assert(all_bf16(a.g, gdn_shape_numel_gate(&S)) && all_bf16(a.beta, gdn_shape_numel_gate(&S)));
  const size_t rows = gdn_shape_numel_qk(&S) / (size_t)S.Dk;
  long differ = 0;
  for (size_t r = 0; r < rows; r++) {
    double n2 = 0, raw2 = 0;
    for (int64_t i = 0; i < S.Dk; i++) {
      double y = a.k[r * (size_t)S.Dk + (size_t)i];
      n2 += y * y;
      double x = gdn_bf16_round((float)gdn_rng_normal(9, 2 /* S_K */, r * (size_t)S.Dk + (size_t)i));
      raw2 += x * x;
    }
    ck_assert_msg(fabs(sqrt(n2) - 1) < 0x1p-6, "row %zu: norm %.6f", r, sqrt(n2));
    for (int64_t i = 0; i < S.Dk; i++) {
      double x = gdn_bf16_round((float)gdn_rng_normal(9, 2, r * (size_t)S.Dk + (size_t)i));
      differ += gdn_bf16_round((float)(x / sqrt(raw2 + 1e-6))) != a.k[r * (size_t)S.Dk + (size_t)i];
    }
  }
  ck_assert_int_gt(differ, 0);
  gdn_inputs_clear(&a);
  gdn_inputs_clear(&b);
}
END_TEST

START_TEST(gates_from_bf16_activations) {
  gdn_inputs a;
  gen(&a, GDN_SYNTH_SLOW_GATES);
  for (size_t i = 0; i < gdn_shape_numel_gate(&S); i++) {
    const int64_t h = (int64_t)(i % (size_t)S.Hv);
    const double uA = gdn_rng_uniform(9, 6 /* S_ALOG */, (uint64_t)h);
    const double A = exp(log(1e-4) + uA * (log(1e-1) - log(1e-4)));
    const double al = gdn_bf16_round((float)log(A));
    const double x = gdn_bf16_round(gdn_bf16_round((float)gdn_rng_normal(9, 5 /* S_A */, i)) + 1.0f);
    const double g = -exp(al) * log1p(exp(x));
    const double bb = gdn_bf16_round((float)gdn_rng_normal(9, 4 /* S_B */, i));
    const double beta = 1 / (1 + exp(-bb));
    ck_assert(a.g[i] < 0 && a.beta[i] > 0 && a.beta[i] < 1);
    ck_assert_msg(fabs(a.g[i] - g) <= 0x1p-7 * fabs(g), "g[%zu] %g vs %g", i, a.g[i], g);
    ck_assert_msg(fabs(a.beta[i] - beta) <= 0x1p-7 * beta, "beta[%zu]", i);
  }
  gdn_inputs_clear(&a);
}
END_TEST

CKR_MAIN("prelude", "all", 0, bf16_values_normalised_rows, gates_from_bf16_activations)
