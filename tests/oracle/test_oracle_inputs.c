/* The oracle honours every field of gdn_inputs: h0, grouped heads, the
 * given scale, the in-kernel L2 norm. */
#include <check.h>

#include "gdn_alloc.h"
#include "oracle_test_util.h"
#include "../check_runner.h"

static const struct { oracle_form f; int64_t C; } forms[] = {{ORACLE_FORM_TOKEN, 0},
                                                             {ORACLE_FORM_CHUNKED, 8}};

/* h0 is used as given: with beta = 0 and g = 0 the state never changes
 * (a = 1, delta = 0), so ht must be h0 exactly and o_t = h0^T Q_t; and on
 * real gates h0 changes the result, while an explicit zero h0 equals the
 * absent one bit for bit. */
START_TEST(h0_honoured) {
  gdn_shape s = {2, 13, 1, 2, 4, 8};
  gdn_inputs in, frozen, zero;
  tsu_synth(&in, s, GDN_SYNTH_H0, 5);
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(&frozen);
  ck_assert_int_eq(gdn_inputs_copy(&frozen, &in, &e), GDN_OK);
  memset(frozen.beta, 0, gdn_shape_numel_gate(&s) * sizeof(float));
  memset(frozen.g, 0, gdn_shape_numel_gate(&s) * sizeof(float));
  for (int fi = 0; fi < 2; fi++) {
    oracle_config cfg = otu_cfg(128, forms[fi].f, forms[fi].C);
    gdn_outputs out;
    otu_run(&frozen, &cfg, &out);
    for (size_t i = 0; i < gdn_shape_numel_state(&s); i++)
      ck_assert_msg(out.ht[i] == (double)frozen.h0[i], "form %d: ht[%zu] = %.17g, h0 = %.9g",
                    (int)forms[fi].f, i, out.ht[i], (double)frozen.h0[i]);
    /* o = h0^T Q with Q = scale * normalised q: not exact in binary64, but
     * its 128-bit value rounds to within 1 ulp of this binary64 evaluation
     * (Dk = 4 terms, each with relative error ~2^-52). */
    for (int64_t b = 0; b < s.B; b++)
      for (int64_t t = 0; t < s.T; t++) {
        const float *q = gdn_inputs_q(&frozen, b, t, 0);
        double n2 = 0;
        for (int i = 0; i < 4; i++) n2 += (double)q[i] * q[i];
        double r = 1.0 / sqrt(n2 + 1e-6) * 0.5; /* scale = 4^-1/2 */
        for (int64_t j = 0; j < s.Hv; j++) {
          const float *h0 = gdn_inputs_h0(&frozen, b, j);
          for (int64_t c = 0; c < s.Dv; c++) {
            double o = 0, mag = 0;
            for (int i = 0; i < 4; i++) {
              o += (double)h0[i * s.Dv + c] * q[i] * r;
              mag += fabs((double)h0[i * s.Dv + c] * q[i] * r);
            }
            double got = gdn_outputs_o(&out, b, t, j)[c];
            ck_assert_msg(fabs(got - o) <= 1e-14 * mag, "o(b=%lld,t=%lld,j=%lld,c=%lld) = %.17g vs %.17g",
                          (long long)b, (long long)t, (long long)j, (long long)c, got, o);
          }
        }
      }
    gdn_outputs_clear(&out);

    gdn_outputs with, without, zeros;
    otu_run(&in, &cfg, &with);
    gdn_inputs_init(&zero);
    ck_assert_int_eq(gdn_inputs_copy(&zero, &in, &e), GDN_OK);
    memset(zero.h0, 0, gdn_shape_numel_state(&s) * sizeof(float));
    otu_run(&zero, &cfg, &zeros);
    gdn_free(zero.h0);
    zero.h0 = NULL;
    otu_run(&zero, &cfg, &without);
    ck_assert(otu_identical(&zeros, &without));
    ck_assert_int_le(oracle_bits_agreed(&with, &without, 53), 8);
    gdn_outputs_clear(&with);
    gdn_outputs_clear(&without);
    gdn_outputs_clear(&zeros);
    gdn_inputs_clear(&zero);
  }
  gdn_inputs_clear(&in);
  gdn_inputs_clear(&frozen);
}
END_TEST

/* Grouped heads (Hk = 2, Hv = 4: value head j reads key head j / 2) give
 * exactly the outputs of the same inputs with q and k repeat-interleaved to
 * Hk = Hv = 4: the work item for j sees identical numbers either way.  Tiling
 * instead (head j reads j % 2) must give different outputs. */
static void widen(gdn_inputs *wide, const gdn_inputs *in, int interleave) {
  gdn_shape s4 = in->shape;
  s4.Hk = s4.Hv;
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(wide);
  ck_assert_int_eq(gdn_inputs_alloc(wide, &s4, 1, &e), GDN_OK);
  int64_t g = in->shape.Hv / in->shape.Hk, D = in->shape.Dk;
  for (int64_t b = 0; b < s4.B; b++)
    for (int64_t t = 0; t < s4.T; t++)
      for (int64_t j = 0; j < s4.Hv; j++) {
        int64_t src = interleave ? j / g : j % in->shape.Hk;
        memcpy((float *)gdn_inputs_q(wide, b, t, j), gdn_inputs_q(in, b, t, src), D * sizeof(float));
        memcpy((float *)gdn_inputs_k(wide, b, t, j), gdn_inputs_k(in, b, t, src), D * sizeof(float));
      }
  memcpy(wide->v, in->v, gdn_shape_numel_v(&s4) * sizeof(float));
  memcpy(wide->g, in->g, gdn_shape_numel_gate(&s4) * sizeof(float));
  memcpy(wide->beta, in->beta, gdn_shape_numel_gate(&s4) * sizeof(float));
  memcpy(wide->h0, in->h0, gdn_shape_numel_state(&s4) * sizeof(float));
  wide->l2norm_in_kernel = in->l2norm_in_kernel;
}

START_TEST(grouped_heads_equal_repeat_interleave) {
  gdn_shape s = {2, 21, 2, 4, 8, 4};
  gdn_inputs in, wide, tiled;
  tsu_synth(&in, s, GDN_SYNTH_H0, 9);
  widen(&wide, &in, 1);
  widen(&tiled, &in, 0);
  for (int fi = 0; fi < 2; fi++) {
    oracle_config cfg = otu_cfg(96, forms[fi].f, forms[fi].C);
    gdn_outputs a, b, c;
    otu_run(&in, &cfg, &a);
    otu_run(&wide, &cfg, &b);
    otu_run(&tiled, &cfg, &c);
    ck_assert_msg(otu_identical(&a, &b), "form %d: grouped heads differ from repeat-interleave",
                  (int)forms[fi].f);
    ck_assert_int_le(oracle_bits_agreed(&c, &a, 53), 8);
    gdn_outputs_clear(&a);
    gdn_outputs_clear(&b);
    gdn_outputs_clear(&c);
  }
  gdn_inputs_clear(&in);
  gdn_inputs_clear(&wide);
  gdn_inputs_clear(&tiled);
}
END_TEST

/* has_scale: o is linear in the scale (h does not depend on q), and scaling
 * by 2 is exact in MPFR, so scale 0.5 gives exactly twice the o of scale
 * 0.25 and the same ht.  With Dk = 16, Dk^-1/2 = 0.25 exactly, so
 * has_scale = 0 equals has_scale = 1 with 0.25 bit for bit.  With Dk = 8 the
 * oracle's exact 8^-1/2 differs from the binary64 one by ~2^-54 relative:
 * the outputs agree to >= 51 bits but not all 53. */
START_TEST(scale_honoured) {
  gdn_shape s = {1, 17, 1, 2, 16, 4};
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0, 4);
  for (int fi = 0; fi < 2; fi++) {
    oracle_config cfg = otu_cfg(128, forms[fi].f, forms[fi].C);
    gdn_outputs def, quarter, half;
    otu_run(&in, &cfg, &def);
    in.has_scale = 1;
    in.scale = 0.25;
    otu_run(&in, &cfg, &quarter);
    in.scale = 0.5;
    otu_run(&in, &cfg, &half);
    in.has_scale = 0;
    ck_assert(otu_identical(&def, &quarter));
    for (size_t i = 0; i < gdn_shape_numel_v(&s); i++) ck_assert(half.o[i] == 2 * quarter.o[i]);
    ck_assert(!memcmp(half.ht, quarter.ht, gdn_shape_numel_state(&s) * sizeof(double)));
    gdn_outputs_clear(&def);
    gdn_outputs_clear(&quarter);
    gdn_outputs_clear(&half);
  }
  gdn_inputs_clear(&in);

  gdn_shape s8 = {1, 30, 1, 2, 8, 8};
  tsu_synth(&in, s8, 0, 4);
  oracle_config cfg = otu_cfg(128, ORACLE_FORM_TOKEN, 0);
  gdn_outputs exact, given;
  otu_run(&in, &cfg, &exact);
  in.has_scale = 1;
  in.scale = 1.0 / sqrt(8.0);
  otu_run(&in, &cfg, &given);
  int bits = oracle_bits_agreed(&given, &exact, 53);
  ck_assert_msg(bits >= 51 && bits < 53, "binary64 scale vs exact: %d bits", bits);
  ck_assert(!memcmp(given.ht, exact.ht, gdn_shape_numel_state(&s8) * sizeof(double)));
  gdn_outputs_clear(&exact);
  gdn_outputs_clear(&given);
  gdn_inputs_clear(&in);
}
END_TEST

/* The in-kernel L2 norm on data already normalised (in binary64, rounded to
 * float32): it rescales each q and k by 1 / sqrt(|x|^2 + 1e-6) with
 * |x|^2 = 1 +- Dk 2^-24, i.e. by 1 - delta with |delta| <= (1e-6 +
 * 32 x 2^-24) / 2 < 2^-19.  The recurrence is contractive and o is linear in
 * q and smooth in k, so the outputs move by a few times 2^-19 relative to
 * their scale: >= 15 bits normwise.  They must move (the norm is applied):
 * < 40 bits. */
START_TEST(l2norm_on_prenormalised) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 50, 2, 2, 32, 8}, GDN_SYNTH_H0 | GDN_SYNTH_QK_PRENORM, 6);
  ck_assert_int_eq(in.l2norm_in_kernel, 0);
  for (int fi = 0; fi < 2; fi++) {
    oracle_config cfg = otu_cfg(128, forms[fi].f, forms[fi].C);
    gdn_outputs off, on;
    otu_run(&in, &cfg, &off);
    in.l2norm_in_kernel = 1;
    otu_run(&in, &cfg, &on);
    in.l2norm_in_kernel = 0;
    int nb = otu_norm_bits(&on, &off);
    ck_assert_msg(nb >= 15 && nb < 40, "form %d: l2norm on vs off agree to %d bits (normwise)",
                  (int)forms[fi].f, nb);
    gdn_outputs_clear(&off);
    gdn_outputs_clear(&on);
  }
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("oracle_inputs", "inputs", 60, h0_honoured, grouped_heads_equal_repeat_interleave, scale_honoured,
    l2norm_on_prenormalised)
