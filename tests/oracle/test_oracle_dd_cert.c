/* The dd tier's sampled certificate (oracle.h, "Certificate (sampled)").
 *
 * Checked where the answer is known: an exact case (every operation of
 * both tiers exact: 106 bits, outputs equal to a plain binary64 run);
 * a planted error of known size in a sampled column (exactly 59 bits);
 * a low sample precision, where the truth is visible in binary64.  Then
 * what a sample is: a planted error in an unsampled column is not seen
 * (the full sample sees it), the sample is a pinned pure function of the
 * shape and head, and nothing depends on threads or blocks. */
#include <check.h>

#include "gdn_rng.h"
#include "gdn_threads.h"
#include "oracle_test_util.h"
#include "../check_runner.h"

static void run_dd(const gdn_inputs *in, int64_t ns, gdn_outputs *out, oracle_dd_certificate *cert) {
  oracle_dd_config c;
  oracle_dd_config_init(&c);
  c.sample_columns = ns;
  otu_run_dd(in, &c, out, cert);
}

static int same_cert(const oracle_dd_certificate *a, const oracle_dd_certificate *b) {
  return a->precision_bits == b->precision_bits && a->check_bits == b->check_bits &&
         a->certified_bits == b->certified_bits && a->certified_o == b->certified_o &&
         a->certified_ht == b->certified_ht && a->normwise_bits == b->normwise_bits &&
         a->floor_o == b->floor_o && a->floor_ht == b->floor_ht &&
         a->sample_columns == b->sample_columns && a->sampled_columns == b->sampled_columns &&
         a->total_columns == b->total_columns && a->guaranteed_bits == b->guaranteed_bits &&
         a->guaranteed_o == b->guaranteed_o && a->guaranteed_ht == b->guaranteed_ht &&
         a->guaranteed_normwise == b->guaranteed_normwise &&
         a->bound_violations == b->bound_violations;
}

/* Inputs on which every operation of the recurrence is exact, in binary64
 * already: no L2 norm, scale 1/4, k_t = e_(t mod Dk), g = 0 (a = 1),
 * beta = 1/2, small integer q and v, h0 in quarters.  Each token halves
 * the distance of one state row to v: dyadic numbers with at most T / Dk
 * + 2 fractional bits, and every dot is a sum of such products with small
 * integers. */
static void exact_inputs(gdn_inputs *in, gdn_shape s) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  ck_assert_int_eq(gdn_inputs_alloc(in, &s, 1, &e), GDN_OK);
  in->l2norm_in_kernel = 0;
  in->has_scale = 1;
  in->scale = 0.25;
  for (int64_t t = 0; t < s.T; t++)
    for (int64_t h = 0; h < s.Hk; h++)
      for (int64_t i = 0; i < s.Dk; i++) {
        size_t at = (size_t)((t * s.Hk + h) * s.Dk + i);
        in->k[at] = i == (t + h) % s.Dk ? 1.0f : 0.0f;
        in->q[at] = (float)((int)(gdn_rng_bits(5, 1, at) % 7) - 3);
      }
  for (size_t i = 0; i < gdn_shape_numel_v(&s); i++)
    in->v[i] = (float)((int)(gdn_rng_bits(5, 2, i) % 17) - 8);
  for (size_t i = 0; i < gdn_shape_numel_gate(&s); i++) in->g[i] = 0.0f, in->beta[i] = 0.5f;
  for (size_t i = 0; i < gdn_shape_numel_state(&s); i++)
    in->h0[i] = 0.25f * (float)((int)(gdn_rng_bits(5, 3, i) % 13) + 1); /* nonzero */
}

/* The same recurrence in plain binary64 (exact on exact_inputs). */
static void plain_run(const gdn_inputs *in, gdn_outputs *out) {
  const gdn_shape *s = &in->shape;
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(out);
  ck_assert_int_eq(gdn_outputs_alloc(out, s, GDN_DTYPE_F64, &e), GDN_OK);
  for (int64_t j = 0; j < s->Hv; j++) {
    double *h = gdn_outputs_ht(out, 0, j);
    for (int64_t i = 0; i < s->Dk * s->Dv; i++) h[i] = in->h0[j * s->Dk * s->Dv + i];
    int64_t kh = gdn_inputs_key_head(in, j);
    for (int64_t t = 0; t < s->T; t++) {
      const float *k = gdn_inputs_k(in, 0, t, kh), *q = gdn_inputs_q(in, 0, t, kh);
      const float *v = gdn_inputs_v(in, 0, t, j);
      double beta = gdn_inputs_beta(in, 0, t, j);
      double *o = gdn_outputs_o(out, 0, t, j);
      for (int64_t c = 0; c < s->Dv; c++) {
        double kv = 0;
        for (int64_t i = 0; i < s->Dk; i++) kv += h[i * s->Dv + c] * k[i];
        double d = beta * (v[c] - kv), oc = 0;
        for (int64_t i = 0; i < s->Dk; i++) {
          h[i * s->Dv + c] += k[i] * d;
          oc += h[i * s->Dv + c] * (q[i] * 0.25);
        }
        o[c] = oc;
      }
    }
  }
}

static const gdn_shape EXACT = {1, 40, 1, 2, 8, 6};

START_TEST(exact_case_certifies_everything) {
  gdn_inputs in;
  exact_inputs(&in, EXACT);
  gdn_outputs dd, plain, mp;
  oracle_dd_certificate cert;
  run_dd(&in, 2, &dd, &cert);
  plain_run(&in, &plain);
  oracle_config mc = otu_cfg(128, ORACLE_FORM_TOKEN, 0);
  otu_run(&in, &mc, &mp);
  ck_assert(otu_identical(&dd, &plain) && otu_identical(&mp, &plain));
  ck_assert_int_eq(cert.certified_bits, ORACLE_DD_BITS);
  ck_assert_int_eq(cert.certified_o, ORACLE_DD_BITS);
  ck_assert_int_eq(cert.certified_ht, ORACLE_DD_BITS);
  ck_assert_int_eq(cert.normwise_bits, ORACLE_DD_BITS);
  ck_assert_int_eq(cert.sample_columns, 2);
  ck_assert_int_eq(cert.sampled_columns, 4);
  ck_assert_int_eq(cert.total_columns, 12);
  /* The running bound does not know the arithmetic was exact: it still
   * bounds (0 violations), normwise to some 90 bits; elementwise the exact
   * zeros of o (rows of q that vanish) are judged against the floor tau =
   * 2^-64 max|o| alone: log2(tau / bound) = 64 - (106 - 90) - a few bits. */
  ck_assert_int_eq(cert.bound_violations, 0);
  ck_assert_int_ge(cert.guaranteed_normwise, 88);
  ck_assert_int_ge(cert.guaranteed_bits, 30);
  gdn_outputs_clear(&dd);
  gdn_outputs_clear(&plain);
  gdn_outputs_clear(&mp);
  gdn_inputs_clear(&in);
}
END_TEST

/* floor(log2(a / b)) for positive binary64 a, b, exactly. */
static int flog2_ratio(double a, double b) {
  int ea, eb;
  double ma = frexp(a, &ea), mb = frexp(b, &eb);
  return ea - eb - (ma < mb ? 1 : 0);
}

/* delta = 1.5 2^-60 |r| added to one sampled element of ht after the last
 * token: it moves the low word only (the binary64 outputs are unchanged),
 * and that element then agrees to floor(log2(2^60 / 1.5)) = 59 bits. */
START_TEST(planted_error_known_bits) {
  gdn_inputs in;
  exact_inputs(&in, EXACT);
  gdn_outputs ref, dd;
  oracle_dd_certificate c0, cert;
  run_dd(&in, 2, &ref, &c0);
  int64_t j = 1, col = oracle_dd_sample_start(&EXACT, 2, 0, j) + 1;
  const double rel = 0x1.8p-60;
  oracle_dd_test_plant(0, j, col, EXACT.T - 1, rel);
  run_dd(&in, 2, &dd, &cert);
  oracle_dd_test_plant(0, 0, -1, 0, 0);
  ck_assert(otu_identical(&dd, &ref));
  ck_assert_int_eq(cert.certified_o, ORACLE_DD_BITS);
  ck_assert_int_eq(cert.certified_ht, 59);
  ck_assert_int_eq(cert.certified_bits, 59);
  /* The bound covers rounding, not faults: the planted element (and only
   * it) is caught by the sample's check of the bound. */
  ck_assert_int_eq(c0.bound_violations, 0);
  ck_assert_int_eq(cert.bound_violations, 1);
  /* Normwise: max|r| over the sampled elements of ht against |delta|. */
  double M = 0, r0 = fabs(gdn_outputs_ht(&ref, 0, j)[col]);
  for (int64_t jj = 0; jj < EXACT.Hv; jj++) {
    int64_t s0 = oracle_dd_sample_start(&EXACT, 2, 0, jj);
    for (int64_t i = 0; i < EXACT.Dk; i++)
      for (int64_t c = s0; c < s0 + 2; c++)
        M = fmax(M, fabs(gdn_outputs_ht(&ref, 0, jj)[i * EXACT.Dv + c]));
  }
  ck_assert_int_eq(cert.normwise_bits, flog2_ratio(M, rel * r0));
  gdn_outputs_clear(&ref);
  gdn_outputs_clear(&dd);
  gdn_inputs_clear(&in);
}
END_TEST

/* A realistic case: an error of 2^-70 planted mid-run in a sampled column
 * is seen in the o that follow and in ht; in an unsampled column it is
 * not seen (the certificate is that of the unplanted run, field for field,
 * though the outputs there moved) -- the full sample sees it. */
START_TEST(planted_error_sampled_or_not) {
  gdn_shape s = {1, 200, 1, 2, 32, 32};
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 11);
  gdn_outputs ref, x;
  oracle_dd_certificate c0, c;
  run_dd(&in, 2, &ref, &c0);
  ck_assert(c0.certified_bits >= 85 && c0.normwise_bits >= 100);

  int64_t s0 = oracle_dd_sample_start(&s, 2, 0, 1);
  oracle_dd_test_plant(0, 1, s0, 100, 0x1p-70);
  run_dd(&in, 2, &x, &c);
  /* The error, 2^-70 of |h_0c|, reaches o scaled by |Q_0| ~ Dk^-1/2 and
   * decays with the gates: elementwise 70 + a few bits, normwise (against
   * the largest sampled |o|, ~4x the typical one) a few more. */
  ck_assert_msg(c.certified_bits <= 72 && c.normwise_bits <= 78,
                "a 2^-70 error in a sampled column: certified %d, normwise %d", c.certified_bits,
                c.normwise_bits);
  ck_assert(c0.bound_violations == 0 && c.bound_violations > 0);
  gdn_outputs_clear(&x);

  int64_t other = (s0 + 10) % s.Dv; /* two sampled columns: 10 away is not one */
  oracle_dd_test_plant(0, 1, other, 100, 0x1p-30);
  run_dd(&in, 2, &x, &c);
  ck_assert(same_cert(&c, &c0));
  ck_assert(!otu_identical(&x, &ref));
  gdn_outputs_clear(&x);
  run_dd(&in, s.Dv, &x, &c);
  ck_assert_msg(c.certified_bits <= 32, "the full sample: certified %d", c.certified_bits);
  oracle_dd_test_plant(0, 0, -1, 0, 0);
  gdn_outputs_clear(&x);
  gdn_outputs_clear(&ref);
  gdn_inputs_clear(&in);
}
END_TEST

/* At a sample precision of 40 bits the MPFR values are binary64 numbers
 * (oracle_run's outputs at 40 bits), and the dd values lie within 2^-100
 * of the dd tier's binary64 outputs: the truth is visible.  On the sampled
 * columns the certificate equals oracle_bits_agreed(dd, mpfr-40) up to a
 * floor (the 2^-53 rounding of the dd values can move a ratio across a
 * power of two). */
START_TEST(certificate_equals_truth_at_40_bits) {
  gdn_shape s = {2, 120, 1, 2, 16, 24};
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0, 12);
  oracle_dd_config dc;
  oracle_dd_config_init(&dc);
  dc.sample_prec = 40;
  dc.sample_columns = 3;
  gdn_outputs dd, mp;
  oracle_dd_certificate cert;
  otu_run_dd(&in, &dc, &dd, &cert);
  ck_assert_int_eq(cert.check_bits, 40);
  ck_assert_int_eq(cert.bound_violations, -1); /* 40-bit MPFR cannot check a 2^-80 bound */
  oracle_config mc = otu_cfg(40, ORACLE_FORM_TOKEN, 0);
  otu_run(&in, &mc, &mp);
  /* The sampled columns of both, as outputs of Dv = 3. */
  gdn_shape ss = s;
  ss.Dv = 3;
  gdn_outputs xs, rs;
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(&xs);
  gdn_outputs_init(&rs);
  ck_assert(!gdn_outputs_alloc(&xs, &ss, GDN_DTYPE_F64, &e) &&
            !gdn_outputs_alloc(&rs, &ss, GDN_DTYPE_F64, &e));
  for (int64_t b = 0; b < s.B; b++)
    for (int64_t j = 0; j < s.Hv; j++) {
      int64_t s0 = oracle_dd_sample_start(&s, 3, b, j);
      for (int64_t c = 0; c < 3; c++) {
        for (int64_t t = 0; t < s.T; t++) {
          gdn_outputs_o(&xs, b, t, j)[c] = gdn_outputs_o(&dd, b, t, j)[s0 + c];
          gdn_outputs_o(&rs, b, t, j)[c] = gdn_outputs_o(&mp, b, t, j)[s0 + c];
        }
        for (int64_t i = 0; i < s.Dk; i++) {
          gdn_outputs_ht(&xs, b, j)[i * 3 + c] = gdn_outputs_ht(&dd, b, j)[i * s.Dv + s0 + c];
          gdn_outputs_ht(&rs, b, j)[i * 3 + c] = gdn_outputs_ht(&mp, b, j)[i * s.Dv + s0 + c];
        }
      }
    }
  int truth = oracle_bits_agreed(&xs, &rs, ORACLE_DD_BITS);
  ck_assert_msg(abs(cert.certified_bits - truth) <= 1, "certified %d bits, true agreement %d",
                cert.certified_bits, truth);
  ck_assert_int_le(cert.certified_bits, 40);
  ck_assert_int_ge(cert.certified_bits, 20); /* ill-conditioned elements lose ~15 of 40 */
  gdn_outputs_clear(&xs);
  gdn_outputs_clear(&rs);
  gdn_outputs_clear(&dd);
  gdn_outputs_clear(&mp);
  gdn_inputs_clear(&in);
}
END_TEST

/* The sample: in range, a pure function of (shape, n, b, j) pinned to
 * these values (a change would silently change every certificate), spread
 * over the columns across heads, and the whole of Dv when n >= Dv. */
START_TEST(sample_is_pinned_and_spread) {
  gdn_shape s = {2, 1, 1, 32, 4, 128};
  int64_t seen[128] = {0};
  int distinct = 0;
  for (int64_t b = 0; b < s.B; b++)
    for (int64_t j = 0; j < s.Hv; j++) {
      int64_t a = oracle_dd_sample_start(&s, 2, b, j);
      ck_assert(a >= 0 && a <= s.Dv - 2);
      ck_assert_int_eq(a, oracle_dd_sample_start(&s, 2, b, j));
      if (!seen[a]++) distinct++;
    }
  ck_assert_int_ge(distinct, 40); /* 64 heads */
  gdn_shape p = {1, 1, 1, 4, 4, 128};
  int64_t pinned[4];
  for (int j = 0; j < 4; j++) pinned[j] = oracle_dd_sample_start(&p, 2, 0, j);
  printf("sample starts (Dv 128, n 2, heads 0-3): %lld %lld %lld %lld\n", (long long)pinned[0],
         (long long)pinned[1], (long long)pinned[2], (long long)pinned[3]);
  fflush(stdout);
  const int64_t expect[4] = {50, 67, 75, 61};
  for (int j = 0; j < 4; j++) ck_assert_int_eq(pinned[j], expect[j]);
  ck_assert_int_eq(oracle_dd_sample_start(&p, 128, 0, 3), 0);
  ck_assert_int_eq(oracle_dd_sample_start(&p, 500, 0, 3), 0);

  /* n >= Dv: everything sampled; n = 0: nothing, 0 bits. */
  gdn_inputs in = tsu_inputs((gdn_shape){1, 30, 1, 1, 8, 6}, GDN_SYNTH_H0, 13);
  gdn_outputs a, z;
  oracle_dd_certificate ca, cz;
  run_dd(&in, 99, &a, &ca);
  ck_assert(ca.sample_columns == 6 && ca.sampled_columns == 6 && ca.total_columns == 6);
  run_dd(&in, 0, &z, &cz);
  ck_assert(cz.sample_columns == 0 && cz.sampled_columns == 0 && cz.certified_bits == 0);
  ck_assert_int_eq(cz.precision_bits, ORACLE_DD_BITS);
  ck_assert(otu_identical(&a, &z));
  gdn_outputs_clear(&a);
  gdn_outputs_clear(&z);
  gdn_inputs_clear(&in);
}
END_TEST

/* Threads and blocks: outputs and certificate bit for bit the same. */
START_TEST(threads_and_blocks_change_nothing) {
  gdn_inputs in = tsu_inputs((gdn_shape){2, 50, 1, 3, 12, 20}, GDN_SYNTH_H0, 14);
  oracle_dd_config c;
  oracle_dd_config_init(&c);
  c.sample_columns = 3;
  gdn_outputs ref;
  oracle_dd_certificate cref;
  gdn_threads_set(1);
  otu_run_dd(&in, &c, &ref, &cref);
  const int64_t blocks[] = {0, 1, 3, 7, 20, 1000};
  for (int th = 1; th <= 2; th++)
    for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
      gdn_threads_set(th);
      c.column_block = blocks[bi];
      gdn_outputs out;
      oracle_dd_certificate cert;
      otu_run_dd(&in, &c, &out, &cert);
      ck_assert_msg(otu_identical(&out, &ref) && same_cert(&cert, &cref),
                    "threads %d, column_block %lld: outputs or certificate differ", th,
                    (long long)blocks[bi]);
      gdn_outputs_clear(&out);
    }
  gdn_threads_set(2);
  gdn_outputs_clear(&ref);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("oracle_dd_cert", "dd_cert", 60, exact_case_certifies_everything, planted_error_known_bits,
    planted_error_sampled_or_not, certificate_equals_truth_at_40_bits, sample_is_pinned_and_spread,
    threads_and_blocks_change_nothing)
