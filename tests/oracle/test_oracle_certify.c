/* The oracle's certificate (oracle_run_certified) and oracle_bits_agreed.
 *
 * The certificate is checked against the truth where the truth is visible:
 * below 53 bits the binary64 outputs are the p-bit values themselves, and a
 * 256-bit run rounded to binary64 is a reference accurate to 2^-53, far
 * beyond the 2^-(p-k) differences being measured.  Above 53 bits it is
 * checked by its own consistency (independence of the check precision,
 * scaling with p) and against cases built to lose a known number of bits.
 */
#include <check.h>

#include "gdn_rng.h"
#include "oracle_test_util.h"
#include "../check_runner.h"

static void cert_run(const gdn_inputs *in, long p, oracle_form form, int64_t C, long check,
                     gdn_outputs *out, oracle_certificate *cert) {
  oracle_config cfg = otu_cfg(p, form, C);
  cfg.check_prec = check;
  otu_run_cert(in, &cfg, out, cert);
  ck_assert_int_eq(cert->precision_bits, p);
  ck_assert_int_eq(cert->check_bits, check ? check : p + 64);
  ck_assert_int_le(cert->certified_bits, p);
  ck_assert_int_eq(cert->certified_bits,
                   cert->certified_o < cert->certified_ht ? cert->certified_o : cert->certified_ht);
}

static double max_abs(const double *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    if (fabs(x[i]) > m) m = fabs(x[i]);
  return m;
}

/* Synthetic Qwen inputs: realistic, and ill-conditioned elementwise (some
 * outputs are ~1e-6 of their tensor's largest, so the certificate sits
 * 10-15 bits below p there). */
START_TEST(certificate_equals_truth_below_53) {
  gdn_shape s = {1, 100, 2, 4, 16, 8};
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0, 7);
  oracle_config cref = otu_cfg(256, ORACLE_FORM_TOKEN, 0);
  gdn_outputs ref;
  otu_run(&in, &cref, &ref);
  const long precs[] = {40, 48};
  const struct { oracle_form f; int64_t C; } forms[] = {{ORACLE_FORM_TOKEN, 0},
                                                        {ORACLE_FORM_CHUNKED, 16}};
  for (int pi = 0; pi < 2; pi++)
    for (int fi = 0; fi < 2; fi++) {
      gdn_outputs out, plain;
      oracle_certificate cert;
      cert_run(&in, precs[pi], forms[fi].f, forms[fi].C, 0, &out, &cert);
      /* The outputs are oracle_run's, bit for bit. */
      oracle_config cp = otu_cfg(precs[pi], forms[fi].f, forms[fi].C);
      otu_run(&in, &cp, &plain);
      ck_assert(otu_identical(&out, &plain));
      /* Same definition; the references differ (P = p + 64 bits here, 256
       * bits rounded to 53 there) by 2^-53 relative, which moves an
       * element's |x - r| by 2^-(53 - b) relative (b its agreement, <= p):
       * the floors are equal unless some ratio lies that close to a power
       * of two, and then off by one. */
      int truth = oracle_bits_agreed(&out, &ref, (int)precs[pi]);
      ck_assert_msg(abs(cert.certified_bits - truth) <= 1,
                    "p=%ld form %d: certified %d bits, true agreement %d", precs[pi], (int)forms[fi].f,
                    cert.certified_bits, truth);
      /* Data this ill-conditioned cannot certify p bits: the test would not
       * see a certificate that ignores the errors. */
      ck_assert_int_lt(cert.certified_bits, precs[pi] - 4);
      /* tau = 2^-64 max|r|, and max|r| agrees with max|x| to ~p bits. */
      double fo = ldexp(max_abs(out.o, gdn_shape_numel_v(&s)), -64);
      double fh = ldexp(max_abs(out.ht, gdn_shape_numel_state(&s)), -64);
      ck_assert(fabs(cert.floor_o - fo) <= 1e-9 * fo && fabs(cert.floor_ht - fh) <= 1e-9 * fh);
      gdn_outputs_clear(&out);
      gdn_outputs_clear(&plain);
    }
  gdn_outputs_clear(&ref);
  gdn_inputs_clear(&in);
}
END_TEST

/* A moderate, well-conditioned case: non-negative q, k, h0, v in [1, 2),
 * beta in [0, 1/2), g in (-1, -0.1].  No output is small against its
 * tensor, so the certificate measures the accumulation of rounding alone.
 * Margin (8 bits): a first-order worst-case bound for one output is
 * (Dk + 5) roundings per token over the effective memory 1 / (1 - a) <= 10.5
 * tokens (a <= e^-0.1) plus one dot of Dk: (21 x 10.5 + 16) u < 2^8 u.
 * Observed 3 bits; rounding errors do not all align. */
static void positive_inputs(gdn_inputs *in, gdn_shape s) {
  tsu_synth(in, s, GDN_SYNTH_H0, 21);
  for (size_t i = 0; i < gdn_shape_numel_qk(&s); i++) {
    in->q[i] = fabsf(in->q[i]);
    in->k[i] = fabsf(in->k[i]);
  }
  for (size_t i = 0; i < gdn_shape_numel_v(&s); i++)
    in->v[i] = 1.0f + (float)gdn_rng_uniform(9, 1, i);
  for (size_t i = 0; i < gdn_shape_numel_gate(&s); i++) {
    in->beta[i] = 0.5f * (float)gdn_rng_uniform(9, 2, i);
    in->g[i] = -0.1f - 0.9f * (float)gdn_rng_uniform(9, 3, i);
  }
  for (size_t i = 0; i < gdn_shape_numel_state(&s); i++) in->h0[i] = fabsf(in->h0[i]);
}

START_TEST(certificate_moderate_case) {
  gdn_shape s = {1, 64, 2, 4, 16, 8};
  gdn_inputs in;
  positive_inputs(&in, s);
  const struct { oracle_form f; int64_t C; } forms[] = {{ORACLE_FORM_TOKEN, 0},
                                                        {ORACLE_FORM_CHUNKED, 16}};
  for (int fi = 0; fi < 2; fi++) {
    int bits[2];
    const long precs[] = {64, 128};
    for (int pi = 0; pi < 2; pi++) {
      long p = precs[pi];
      gdn_outputs out, out2;
      oracle_certificate cert, cert2;
      cert_run(&in, p, forms[fi].f, forms[fi].C, 0, &out, &cert);
      ck_assert_msg(cert.certified_bits >= p - 8, "form %d p=%ld: certified %d bits (o %d, ht %d)",
                    (int)forms[fi].f, p, cert.certified_bits, cert.certified_o, cert.certified_ht);
      /* The check precision only has to be well above p: P = p + 64 and
       * p + 250 see the same p-bit errors (the reference's own error is
       * 2^-64 of them), so the certificates agree up to a floor. */
      cert_run(&in, p, forms[fi].f, forms[fi].C, p + 250, &out2, &cert2);
      ck_assert_msg(abs(cert.certified_bits - cert2.certified_bits) <= 1,
                    "certificate depends on the check precision: %d vs %d", cert.certified_bits,
                    cert2.certified_bits);
      ck_assert(otu_identical(&out, &out2));
      bits[pi] = cert.certified_bits;
      gdn_outputs_clear(&out);
      gdn_outputs_clear(&out2);
    }
    /* Errors scale as 2^-p: doubling p from 64 to 128 adds ~64 bits. */
    ck_assert_msg(bits[1] - bits[0] >= 60 && bits[1] - bits[0] <= 68, "p 64 -> 128: %d -> %d bits",
                  bits[0], bits[1]);
  }
  gdn_inputs_clear(&in);
}
END_TEST

/* Strong cancellation built to lose m bits.  Dk = 2 with k_t = (c, c): both
 * rows of h are updated by the same operations, so they stay bitwise equal
 * (h_0c = h_1c = h_c, whatever their rounding errors).  With
 * q = (1, -(1 - 2^-m)) and scale 1, o_c = h_c - (1 - 2^-m) h_c = 2^-m h_c: in
 * the token form the first product is exact, the second is rounded (error
 * <= 2^-p |h_c|), and the sum is exact (Sterbenz), so o_c carries a relative
 * error of up to 2^-(p - m): the certificate must say p - m, give or take
 * the floor and how close the worst of 512 roundings comes to its bound
 * ([p - m - 1, p - m + 2]).  The errors of h_c itself cancel exactly.  The
 * chunked form breaks the row symmetry inside (Q exp(G) and Q K^T are
 * rounded per element, then o_inter + P v_new adds two cancelled sums), so
 * it loses a few bits more: [p - m - 8, p - m + 2].  Nothing in ht cancels. */
static void cancelling_inputs(gdn_inputs *in, int m) {
  gdn_shape s = {1, 64, 1, 1, 2, 8};
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  ck_assert_int_eq(gdn_inputs_alloc(in, &s, 0, &e), GDN_OK);
  for (int t = 0; t < 64; t++) {
    float c = (float)(0.3 + 0.4 * gdn_rng_uniform(1, 1, (uint64_t)t));
    in->k[2 * t] = in->k[2 * t + 1] = c;
    in->q[2 * t] = 1.0f;
    in->q[2 * t + 1] = -(1.0f - ldexpf(1.0f, -m));
    in->g[t] = -(float)(0.5 * gdn_rng_uniform(1, 2, (uint64_t)t));
    in->beta[t] = (float)gdn_rng_uniform(1, 3, (uint64_t)t);
    for (int c2 = 0; c2 < 8; c2++)
      in->v[t * 8 + c2] = (float)gdn_rng_normal(1, 4, (uint64_t)(t * 8 + c2));
  }
  in->has_scale = 1;
  in->scale = 1.0;
}

START_TEST(certificate_cancellation_stress) {
  const int m = 20;
  gdn_inputs in;
  cancelling_inputs(&in, m);
  const long precs[] = {64, 128};
  for (int pi = 0; pi < 2; pi++) {
    long p = precs[pi];
    gdn_outputs out;
    oracle_certificate cert;
    cert_run(&in, p, ORACLE_FORM_TOKEN, 0, 0, &out, &cert);
    ck_assert_msg(cert.certified_o >= p - m - 1 && cert.certified_o <= p - m + 2,
                  "token p=%ld: o certified to %d bits, expected ~%ld", p, cert.certified_o, p - m);
    ck_assert_int_ge(cert.certified_ht, p - 8);
    ck_assert_int_eq(cert.certified_bits, cert.certified_o);
    gdn_outputs_clear(&out);
    cert_run(&in, p, ORACLE_FORM_CHUNKED, 8, 0, &out, &cert);
    ck_assert_msg(cert.certified_o >= p - m - 8 && cert.certified_o <= p - m + 2,
                  "chunked p=%ld: o certified to %d bits, expected ~%ld", p, cert.certified_o,
                  p - m);
    ck_assert_int_ge(cert.certified_ht, p - 8);
    gdn_outputs_clear(&out);
  }
  gdn_inputs_clear(&in);
}
END_TEST

/* Exactly equal values: x == r gives p bits.  With v = 0 and h0 = 0 every
 * output is exactly 0 at any precision (tau = 0); with the dyadic case of
 * test_oracle_exact every value is exact and nonzero. */
START_TEST(certificate_exact_values) {
  gdn_shape s = {1, 9, 1, 2, 4, 4};
  gdn_inputs in = tsu_inputs(s, 0, 3);
  memset(in.v, 0, gdn_shape_numel_v(&s) * sizeof(float));
  gdn_outputs out;
  oracle_certificate cert;
  cert_run(&in, 64, ORACLE_FORM_TOKEN, 0, 0, &out, &cert);
  ck_assert_int_eq(cert.certified_bits, 64);
  ck_assert(cert.floor_o == 0 && cert.floor_ht == 0);
  ck_assert(max_abs(out.o, gdn_shape_numel_v(&s)) == 0);
  gdn_outputs_clear(&out);
  gdn_inputs_clear(&in);

  otu_scalar_state(&in); /* ht = 21/16 */
  cert_run(&in, 128, ORACLE_FORM_CHUNKED, 2, 0, &out, &cert);
  ck_assert_int_eq(cert.certified_bits, 128);
  ck_assert(cert.floor_o == ldexp(21.0 / 16, -64) && cert.floor_ht == ldexp(21.0 / 16, -64));
  gdn_outputs_clear(&out);
  gdn_inputs_clear(&in);
}
END_TEST

/* oracle_bits_agreed, rule by rule, on hand-made outputs. */
static void mk(gdn_outputs *x, gdn_outputs *r) {
  gdn_shape s = {1, 2, 1, 1, 1, 2}; /* o: 4 elements, ht: 2 */
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(x);
  gdn_outputs_init(r);
  ck_assert_int_eq(gdn_outputs_alloc(x, &s, GDN_DTYPE_F64, &e), GDN_OK);
  ck_assert_int_eq(gdn_outputs_alloc(r, &s, GDN_DTYPE_F64, &e), GDN_OK);
  const double o[] = {1.5, -3.0, 0.25, 1.0}, ht[] = {2.0, -0.5};
  memcpy(x->o, o, sizeof o);
  memcpy(r->o, o, sizeof o);
  memcpy(x->ht, ht, sizeof ht);
  memcpy(r->ht, ht, sizeof ht);
}

START_TEST(bits_agreed_rules) {
  gdn_outputs x, r;
  mk(&x, &r);
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 53); /* equal: the cap */
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 20), 20);
  /* 1 ulp at 1.5: log2(1.5 / 2^-52) = 52.58. */
  x.o[0] = nextafter(1.5, 2.0);
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 52);
  x.o[0] = 1.5;
  /* Relative 2^-20 (exact in binary64): 20 bits. */
  x.o[1] = -3.0 * (1 + 0x1p-20);
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 20);
  x.o[1] = -3.0;
  /* Opposite sign: |x - r| = 2|r|, log2(1/2) = -1, clamped to 0. */
  x.ht[1] = 0.5;
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 0);
  x.ht[1] = -0.5;
  /* A tiny reference is judged against tau = 2^-64 max|r| = 2^-64 * 3:
   * r = 1e-30, x = 0: log2(3 2^-64 / 1e-30) = 37.24 -> 37 (its relative
   * agreement is 0 bits). */
  r.o[2] = 1e-30;
  x.o[2] = 0.0;
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 37);
  /* ... and the same tiny value computed as 1e-30 (1 + 2^-10): relative 10
   * bits, but against tau: log2(3 2^-64 / (1e-30 2^-10)) = 47.24 -> 47. */
  x.o[2] = 1e-30 * (1 + 0x1p-10);
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 47);
  r.o[2] = x.o[2] = 0.25;
  /* A reference of all zeros has tau = 0: any difference is 0 bits. */
  r.ht[0] = r.ht[1] = 0.0;
  x.ht[0] = 0.0;
  x.ht[1] = 1e-300;
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 0);
  x.ht[1] = -0.0; /* -0 == +0 */
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 53);
  r.ht[0] = x.ht[0] = 2.0;
  r.ht[1] = x.ht[1] = -0.5;
  /* Non-finite values. */
  x.o[3] = r.o[3] = INFINITY;
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 53);
  x.o[3] = 1.0;
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 0);
  x.o[3] = r.o[3] = NAN;
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 0);
  x.o[3] = r.o[3] = 1.0;
  /* Far apart, outside Sterbenz's range: exact difference in MPFR. 2^-1000
   * vs 2^-1074 (the smallest subnormal) in a tensor whose max is 3:
   * tau / |d| = 3 2^-64 / (2^-1000 - 2^-1074) -> 937 capped at 53; relative
   * floor(log2(2^-1074 / |d|)) < 0.  So 53, from the tau branch alone. */
  r.o[2] = 0x1p-1074;
  x.o[2] = 0x1p-1000;
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 53);
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 2000), 937);
  r.o[2] = x.o[2] = 0.25;
  /* Unusable arguments. */
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, -1), -1);
  ck_assert_int_eq(oracle_bits_agreed(NULL, &r, 53), -1);
  r.shape.Dv = 1;
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), -1);
  r.shape.Dv = 2;
  r.shape.Hk = 7; /* key heads do not shape the outputs: still comparable */
  ck_assert_int_eq(oracle_bits_agreed(&x, &r, 53), 53);
  r.shape.Hk = 1;
  gdn_outputs_clear(&x);
  gdn_outputs_clear(&r);
}
END_TEST

/* A planted difference shows: different inputs agree to almost nothing, and
 * one output perturbed by 2^-30 (relative) is found at 29 or 30 bits (30
 * exactly if the perturbation survives rounding to binary64 unchanged). */
START_TEST(planted_difference) {
  gdn_shape s = {1, 40, 2, 2, 8, 8};
  gdn_inputs a, b;
  tsu_synth(&a, s, GDN_SYNTH_H0, 7);
  tsu_synth(&b, s, GDN_SYNTH_H0, 8);
  oracle_config cfg = otu_cfg(128, ORACLE_FORM_TOKEN, 0);
  gdn_outputs oa, ob;
  otu_run(&a, &cfg, &oa);
  otu_run(&b, &cfg, &ob);
  ck_assert_int_le(oracle_bits_agreed(&ob, &oa, 53), 2);
  ck_assert_int_eq(oracle_bits_agreed(&oa, &oa, 53), 53);
  /* Plant into the largest |o| so no other rule (tau) intervenes. */
  size_t n = gdn_shape_numel_v(&s), imax = 0;
  for (size_t i = 0; i < n; i++)
    if (fabs(oa.o[i]) > fabs(oa.o[imax])) imax = i;
  gdn_outputs_clear(&ob);
  gdn_outputs_init(&ob);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_outputs_alloc(&ob, &s, GDN_DTYPE_F64, &e), GDN_OK);
  memcpy(ob.o, oa.o, n * sizeof(double));
  memcpy(ob.ht, oa.ht, gdn_shape_numel_state(&s) * sizeof(double));
  ob.o[imax] *= 1 + 0x1p-30;
  int bits = oracle_bits_agreed(&ob, &oa, 53);
  ck_assert_msg(bits == 29 || bits == 30, "planted 2^-30: %d bits", bits);
  gdn_outputs_clear(&oa);
  gdn_outputs_clear(&ob);
  gdn_inputs_clear(&a);
  gdn_inputs_clear(&b);
}
END_TEST

CKR_MAIN("oracle_certify", "certify", 60, certificate_equals_truth_below_53, certificate_moderate_case,
    certificate_cancellation_stress, certificate_exact_values, bits_agreed_rules, planted_difference)
