/* Packed documents in the float kernels (gdn_inputs.seg, packing leak or
 * reset; gdn_inputs.h says what each means).
 *
 *   - leak, no padding: ids change nothing, bit for bit (MaxText's kernel
 *     does not look at boundaries);
 *   - padding (id 0): the same as k, v, g zeroed in the inputs, bit for bit,
 *     in every kernel;
 *   - reset: in the float64 recurrence, every document's o equals that
 *     document run alone from the zero state (to 1e-14: same operations,
 *     signs of zero aside); negative control: leak differs by O(1);
 *   - the chunked kernels (scan; affine-prefix token- and chunk-sharded,
 *     three prefix schedules) against the float64 recurrence with the same
 *     semantics: within 4x the scan's own error and 2e-5, with boundaries on
 *     a seam, on a chunk edge and inside a chunk;
 *   - negative control (the issue's): an implementation that resets at the
 *     seam instead of at the document boundary next to it is off by orders
 *     of magnitude more than the bound;
 *   - a reset on a seam makes the incoming state irrelevant: the next
 *     device's o equals the scan's bit for bit (leak: it does not).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern_test_util.h"
#include "../test_util_synth.h"
#include "../check_runner.h"

static const gdn_shape S = {1, 256, 1, 2, 16, 16};

/* ids: documents 1 | 2 | 3 | 4 starting at t = 0, 70 (inside a chunk of
 * 16, 6 after the seam 64 of D = 4), 128 (a seam of D = 2 and 4, a chunk
 * edge), 200 (inside), with `pad` padding tokens at the end. */
static void make(gdn_inputs *in, uint64_t seed, int packing, int pad) {
  kt_make(in, S, seed, 1, 1, 0.002f); /* long memory: state crosses everything */
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_inputs_alloc_seg(in, &e), GDN_OK);
  for (int64_t t = 0; t < S.T; t++)
    in->seg[t] = t >= S.T - pad ? 0 : t < 70 ? 1 : t < 128 ? 2 : t < 200 ? 3 : 4;
  in->packing = packing;
}

static kern_config cfg(gdn_dtype dt, int64_t C, int64_t D, kern_shard sh, kern_prefix p) {
  kern_config c = kt_cfg(dt, C, D);
  c.shard = sh;
  c.prefix = p;
  return c;
}

START_TEST(leak_without_padding_is_unchanged) {
  gdn_inputs in, plain;
  make(&in, 1, GDN_PACKING_LEAK, 0);
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(&plain);
  ck_assert_int_eq(gdn_inputs_copy(&plain, &in, &e), GDN_OK);
  gdn_free(plain.seg), plain.seg = NULL;
  for (int k = 0; k < 3; k++) {
    kern_config c = cfg(GDN_DTYPE_F32, 16, 4, KERN_SHARD_TOKENS, KERN_PREFIX_HILLIS_STEELE);
    gdn_outputs a = kt_outputs(), b = kt_outputs();
    kt_run_ok((kt_kernel)k, &in, &c, &a);
    kt_run_ok((kt_kernel)k, &plain, &c, &b);
    ck_assert_msg(kt_same_outputs(&a, &b), "%s", kt_kernel_names[k]);
    gdn_outputs_clear(&a), gdn_outputs_clear(&b);
  }
  /* negative control: reset on the same ids is not the same */
  in.packing = GDN_PACKING_RESET;
  kern_config c = cfg(GDN_DTYPE_F32, 16, 1, KERN_SHARD_TOKENS, KERN_PREFIX_SEQUENTIAL);
  gdn_outputs a = kt_outputs(), b = kt_outputs();
  kt_run_ok(K_SCAN, &in, &c, &a);
  kt_run_ok(K_SCAN, &plain, &c, &b);
  ck_assert(kt_rel_o(&a, &b) > 1e-2);
  gdn_outputs_clear(&a), gdn_outputs_clear(&b);
  gdn_inputs_clear(&plain);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(padding_is_zeroed_k_v_g) {
  for (int packing = 0; packing < 2; packing++) {
    gdn_inputs in, z;
    make(&in, 2, packing, 23);
    for (int64_t t = 100; t < 110; t++) in.seg[t] = 0; /* padding inside a document too */
    gdn_error e;
    gdn_error_init(&e);
    gdn_inputs_init(&z);
    ck_assert_int_eq(gdn_inputs_copy(&z, &in, &e), GDN_OK);
    for (int64_t t = 0; t < S.T; t++) {
      if (in.seg[t]) continue;
      for (int64_t h = 0; h < S.Hk; h++)
        memset(z.k + (t * S.Hk + h) * S.Dk, 0, (size_t)S.Dk * sizeof(float));
      for (int64_t h = 0; h < S.Hv; h++) {
        memset(z.v + (t * S.Hv + h) * S.Dv, 0, (size_t)S.Dv * sizeof(float));
        z.g[t * S.Hv + h] = 0;
      }
      z.seg[t] = t > 0 ? z.seg[t - 1] : 1; /* no padding left; boundaries as before */
    }
    /* the token after an inner padding run is a boundary (its id differs
     * from the padding's 0, gdn_inputs.h): in z, a document of its own */
    if (packing == GDN_PACKING_RESET)
      for (int64_t t = 110; t < 128; t++) z.seg[t] = 99;
    for (int k = 0; k < 3; k++) {
      kern_config c = cfg(GDN_DTYPE_F32, 16, 4, KERN_SHARD_TOKENS, KERN_PREFIX_SEQUENTIAL);
      gdn_outputs a = kt_outputs(), b = kt_outputs();
      kt_run_ok((kt_kernel)k, &in, &c, &a);
      kt_run_ok((kt_kernel)k, &z, &c, &b);
      ck_assert_msg(kt_same_outputs(&a, &b), "%s packing %d", kt_kernel_names[k], packing);
      gdn_outputs_clear(&a), gdn_outputs_clear(&b);
    }
    gdn_inputs_clear(&z);
    gdn_inputs_clear(&in);
  }
}
END_TEST

/* o rows [t0, t1) of head (0, hv) of x against those of y from row u0. */
static double rel_rows(const gdn_outputs *x, int64_t t0, int64_t t1, const gdn_outputs *y,
                       int64_t u0) {
  double num = 0, den = 0;
  for (int64_t t = t0; t < t1; t++)
    for (int64_t h = 0; h < S.Hv; h++) {
      const double *a = gdn_outputs_o((gdn_outputs *)x, 0, t, h);
      const double *b = gdn_outputs_o((gdn_outputs *)y, 0, u0 + t - t0, h);
      for (int64_t d = 0; d < S.Dv; d++) num += (a[d] - b[d]) * (a[d] - b[d]), den += b[d] * b[d];
    }
  return sqrt(num / den);
}

START_TEST(reset_is_each_document_alone) {
  gdn_inputs in;
  make(&in, 3, GDN_PACKING_RESET, 0);
  kern_config c = cfg(GDN_DTYPE_F64, 16, 1, KERN_SHARD_TOKENS, KERN_PREFIX_SEQUENTIAL);
  gdn_outputs packed = kt_outputs();
  kt_run_ok(K_RECURRENT, &in, &c, &packed);
  static const int64_t starts[5] = {0, 70, 128, 200, 256};
  for (int d = 1; d < 4; d++) {
    const int64_t t0 = starts[d], L = starts[d + 1] - t0;
    gdn_inputs one;
    tsu_slice_tokens(&one, &in, 0, t0, L);
    gdn_outputs alone = kt_outputs(), leak = kt_outputs();
    kt_run_ok(K_RECURRENT, &one, &c, &alone);
    /* float64, the same operations from an exact zero state: ~1e-16 */
    const double r = rel_rows(&packed, t0, t0 + L, &alone, 0);
    ck_assert_msg(r < 1e-14, "document %d: %.3g", d + 1, r);
    in.packing = GDN_PACKING_LEAK; /* negative control */
    kt_run_ok(K_RECURRENT, &in, &c, &leak);
    in.packing = GDN_PACKING_RESET;
    ck_assert(rel_rows(&leak, t0, t0 + L, &alone, 0) > 1e-3);
    gdn_outputs_clear(&alone), gdn_outputs_clear(&leak);
    gdn_inputs_clear(&one);
  }
  gdn_outputs_clear(&packed);
  gdn_inputs_clear(&in);
}
END_TEST

typedef struct pk_case {
  int64_t C, D;
  kern_shard shard;
  kern_prefix prefix;
  kern_matmul mm;
} pk_case;

static const pk_case pk[] = {
    {16, 4, KERN_SHARD_TOKENS, KERN_PREFIX_SEQUENTIAL, KERN_MATMUL_IEEE},
    {16, 2, KERN_SHARD_TOKENS, KERN_PREFIX_HILLIS_STEELE, KERN_MATMUL_HIGHEST},
    {32, 8, KERN_SHARD_TOKENS, KERN_PREFIX_ASSOCIATIVE_SCAN, KERN_MATMUL_IEEE},
    {24, 3, KERN_SHARD_CHUNKS, KERN_PREFIX_SEQUENTIAL, KERN_MATMUL_IEEE},
    {64, 1, KERN_SHARD_TOKENS, KERN_PREFIX_SEQUENTIAL, KERN_MATMUL_HIGHEST},
};

/* The bound: 4x the scan's own error (the composition adds a few ulps per
 * seam; measured ratios 0.9-1.3) and 2e-5 (~170 float32 ulps; measured
 * 2e-7 to 1e-6).  Negative control: the same kernel with a boundary moved
 * to the seam next to it (64 instead of 70) -- what an implementation
 * resetting at seams would compute -- is off by more than 1e-3. */
START_TEST(chunked_kernels_match_the_recurrence) {
  const pk_case *p = &pk[_i];
  gdn_threads_set(2);
  for (int packing = 0; packing < 2; packing++) {
    gdn_inputs in;
    make(&in, 4, packing, 9);
    kern_config c64 = cfg(GDN_DTYPE_F64, 16, 1, KERN_SHARD_TOKENS, KERN_PREFIX_SEQUENTIAL);
    kern_config c = cfg(GDN_DTYPE_F32, p->C, p->D, p->shard, p->prefix);
    c.matmul = p->mm;
    gdn_outputs ref, scan, aff;
    gdn_outputs_init(&ref), gdn_outputs_init(&scan), gdn_outputs_init(&aff);
    kt_run_ok(K_RECURRENT, &in, &c64, &ref);
    kt_run_ok(K_SCAN, &in, &c, &scan);
    kt_run_ok(K_AFFINE, &in, &c, &aff);
    const double es = kt_rel_o(&scan, &ref), ea = kt_rel_o(&aff, &ref);
    const double hs = kt_rel_ht(&scan, &ref), ha = kt_rel_ht(&aff, &ref);
    ck_assert_msg(es < 2e-5 && ea <= 4 * es + 1e-7 && ea < 2e-5, "case %d packing %d: o %.3g / %.3g",
                  _i, packing, ea, es);
    ck_assert_msg(hs < 2e-5 && ha <= 4 * hs + 1e-7 && ha < 2e-5, "case %d packing %d: ht %.3g / %.3g",
                  _i, packing, ha, hs);
    if (packing == GDN_PACKING_RESET) {
      for (int64_t t = 64; t < 70; t++) in.seg[t] = 2; /* reset at the seam 64, not at 70 */
      gdn_outputs w = kt_outputs();
      kt_run_ok(K_AFFINE, &in, &c, &w);
      ck_assert_msg(kt_rel_o(&w, &ref) > 1e-3, "case %d: wrong reset %.3g", _i, kt_rel_o(&w, &ref));
      gdn_outputs_clear(&w);
    }
    gdn_outputs_clear(&ref), gdn_outputs_clear(&scan), gdn_outputs_clear(&aff);
    gdn_inputs_clear(&in);
  }
  gdn_threads_set(1);
}
END_TEST

/* A reset at the seam 128 (D = 2, token sharding, C = 16: the pieces are
 * the scan's chunks): device 1 starts its document from zero whatever
 * state arrives, so its o equals the scan's bit for bit.  Leak: the
 * prefix-derived state differs from the scan's carry by round-off, which
 * shows in o. */
START_TEST(reset_on_a_seam_makes_the_seam_exact) {
  for (int packing = 0; packing < 2; packing++) {
    gdn_inputs in;
    make(&in, 5, packing, 0);
    kern_config c = cfg(GDN_DTYPE_F32, 16, 2, KERN_SHARD_TOKENS, KERN_PREFIX_SEQUENTIAL);
    gdn_outputs s = kt_outputs(), a = kt_outputs();
    kt_run_ok(K_SCAN, &in, &c, &s);
    kt_run_ok(K_AFFINE, &in, &c, &a);
    const size_t row = (size_t)(S.Hv * S.Dv);
    const int same = kt_same(gdn_outputs_o(&a, 0, 128, 0), gdn_outputs_o(&s, 0, 128, 0), 128 * row);
    ck_assert_msg(same == (packing == GDN_PACKING_RESET), "packing %d: same %d", packing, same);
    gdn_outputs_clear(&s), gdn_outputs_clear(&a);
    gdn_inputs_clear(&in);
  }
}
END_TEST

int main(void) {
  Suite *su = suite_create("packing");
  TCase *tc = CKR_TCASE(su, "all", 120, leak_without_padding_is_unchanged, padding_is_zeroed_k_v_g,
      reset_is_each_document_alone, reset_on_a_seam_makes_the_seam_exact);
  tcase_add_loop_test(tc, chunked_kernels_match_the_recurrence, 0, (int)(sizeof pk / sizeof pk[0]));
  return ckr_run(su);
}
