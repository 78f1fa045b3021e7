/* Packed documents in the oracle (oracle.h, gdn_inputs.h): both tiers of the
 * token form.
 *   - padding (segment id 0) is exactly the step with k = v = g = 0:
 *     outputs identical to inputs with those zeroed (MPFR and dd);
 *   - reset: every document's o equals that document run alone from the
 *     zero state (MPFR; the same operations from an exact zero: identical
 *     but for signs of zero, so >= 120 bits normwise); negative control:
 *     leak differs in the first bits;
 *   - the dd tier agrees with MPFR under both semantics as it does without
 *     documents (>= 90 bits normwise; measured 102-105) and its running
 *     bound holds (no violation);
 *   - the chunked form refuses segment ids. */
#include <check.h>

#include "gdn_alloc.h"
#include "oracle_test_util.h"
#include "../check_runner.h"

static const gdn_shape S = {2, 160, 1, 2, 8, 6};

static gdn_inputs packed(int packing) {
  gdn_inputs in = tsu_inputs(S, GDN_SYNTH_SLOW_GATES | GDN_SYNTH_H0, 7);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_synth_segments(&in, 7, 5, &e), GDN_OK);
  in.packing = packing;
  return in;
}

static void run_dd(const gdn_inputs *in, gdn_outputs *out, oracle_dd_certificate *cert) {
  oracle_dd_config c;
  oracle_dd_config_init(&c);
  c.sample_columns = S.Dv; /* every column checked against MPFR */
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(out);
  ck_assert_msg(oracle_run_dd(in, &c, out, cert, &e) == GDN_OK, "%s", e.msg);
}

static int same(const gdn_outputs *a, const gdn_outputs *b) {
  return !memcmp(a->o, b->o, gdn_shape_numel_v(&S) * sizeof(double)) &&
         !memcmp(a->ht, b->ht, gdn_shape_numel_state(&S) * sizeof(double));
}

START_TEST(padding_is_zeroed_k_v_g) {
  for (int packing = 0; packing < 2; packing++) {
    gdn_inputs in = packed(packing), z;
    gdn_error e;
    gdn_error_init(&e);
    gdn_inputs_init(&z);
    ck_assert_int_eq(gdn_inputs_copy(&z, &in, &e), GDN_OK);
    int64_t npad = 0;
    for (int64_t b = 0; b < S.B; b++)
      for (int64_t t = 0; t < S.T; t++) {
        if (in.seg[b * S.T + t]) continue;
        npad++;
        memset(z.k + (b * S.T + t) * S.Hk * S.Dk, 0, (size_t)(S.Hk * S.Dk) * sizeof(float));
        memset(z.v + (b * S.T + t) * S.Hv * S.Dv, 0, (size_t)(S.Hv * S.Dv) * sizeof(float));
        for (int64_t h = 0; h < S.Hv; h++) z.g[(b * S.T + t) * S.Hv + h] = 0;
        z.seg[b * S.T + t] = z.seg[b * S.T + t - 1]; /* the padding is the tail */
      }
    ck_assert_int_eq(npad, 2 * 5); /* T/32 per row */
    oracle_config c = otu_cfg(128, ORACLE_FORM_TOKEN, 64);
    gdn_outputs a, b2;
    otu_run(&in, &c, &a);
    otu_run(&z, &c, &b2);
    ck_assert(same(&a, &b2));
    gdn_outputs_clear(&a), gdn_outputs_clear(&b2);
    oracle_dd_certificate ca, cb;
    run_dd(&in, &a, &ca);
    run_dd(&z, &b2, &cb);
    ck_assert(same(&a, &b2));
    gdn_outputs_clear(&a), gdn_outputs_clear(&b2);
    gdn_inputs_clear(&z);
    gdn_inputs_clear(&in);
  }
}
END_TEST

START_TEST(reset_is_each_document_alone) {
  gdn_inputs in = packed(GDN_PACKING_RESET);
  oracle_config c = otu_cfg(128, ORACLE_FORM_TOKEN, 64);
  gdn_outputs all, leak;
  otu_run(&in, &c, &all);
  in.packing = GDN_PACKING_LEAK;
  otu_run(&in, &c, &leak);
  in.packing = GDN_PACKING_RESET;
  const int64_t b = 1;
  const int32_t *sg = in.seg + b * S.T;
  int docs = 0;
  for (int64_t t0 = 1; t0 < S.T; t0++) {
    if (sg[t0] == 0 || sg[t0] == sg[t0 - 1]) continue; /* t0: a boundary */
    int64_t t1 = t0;
    while (t1 < S.T && sg[t1] == sg[t0]) t1++;
    const int64_t L = t1 - t0, off = b * S.T + t0;
    gdn_inputs one;
    tsu_slice_tokens(&one, &in, b, t0, L);
    gdn_outputs alone;
    otu_run(&one, &c, &alone);
    const size_t n = (size_t)(L * S.Hv * S.Dv);
    const double *po = all.o + off * S.Hv * S.Dv, *lo = leak.o + off * S.Hv * S.Dv;
    ck_assert_int_ge(otu_norm_bits1(po, alone.o, n), 120);
    ck_assert_int_le(otu_norm_bits1(lo, alone.o, n), 12); /* leak: carried state shows */
    gdn_outputs_clear(&alone);
    gdn_inputs_clear(&one);
    docs++;
  }
  ck_assert_int_ge(docs, 2);
  gdn_outputs_clear(&all), gdn_outputs_clear(&leak);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(dd_tier_agrees) {
  for (int packing = 0; packing < 2; packing++) {
    gdn_inputs in = packed(packing);
    oracle_config c = otu_cfg(128, ORACLE_FORM_TOKEN, 64);
    gdn_outputs mp, dd;
    otu_run(&in, &c, &mp);
    oracle_dd_certificate cert;
    run_dd(&in, &dd, &cert);
    const int bo = otu_norm_bits1(dd.o, mp.o, gdn_shape_numel_v(&S));
    const int bh = otu_norm_bits1(dd.ht, mp.ht, gdn_shape_numel_state(&S));
    ck_assert_msg(bo >= 90 && bh >= 90, "packing %d: %d %d bits", packing, bo, bh);
    ck_assert_int_eq(cert.bound_violations, 0);
    ck_assert_int_ge(cert.guaranteed_bits, 40);
    gdn_outputs_clear(&mp), gdn_outputs_clear(&dd);
    gdn_inputs_clear(&in);
  }
}
END_TEST

START_TEST(chunked_form_refuses_documents) {
  gdn_inputs in = packed(GDN_PACKING_LEAK);
  oracle_config c = otu_cfg(128, ORACLE_FORM_CHUNKED, 16);
  otu_expect_error(&in, &c, GDN_ERR_INPUT, "packed documents", 0);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("oracle_packing", "all", 120, padding_is_zeroed_k_v_g, reset_is_each_document_alone, dd_tier_agrees,
    chunked_form_refuses_documents)
