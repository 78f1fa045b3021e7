/* The float kernels against the MPFR oracle: the numbers the toolkit exists
 * for.  Shapes are small so the suite stays fast; every bound is justified. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gdn_synth.h"
#include "gdn_threads.h"
#include "kern.h"
#include "oracle.h"
#include "parity_metrics.h"

#include "../test_util_kern_cfg.h"
#include "../test_util_synth.h"
#include "../check_runner.h"

typedef struct { double o, ht; } relerr;

static relerr rel(const gdn_outputs *x, const gdn_outputs *r) {
  const gdn_shape *s = &x->shape;
  int64_t od[4] = {s->B, s->T, s->Hv, s->Dv}, hd[4] = {s->B, s->Hv, s->Dk, s->Dv};
  parity_metrics mo, mh;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_metrics_compute(x->o, r->o, od, GDN_DTYPE_F64, &mo, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_compute(x->ht, r->ht, hd, GDN_DTYPE_F64, &mh, &e), GDN_OK);
  relerr q = {mo.rel_fro, mh.rel_fro};
  return q;
}

static void oracle(const gdn_inputs *in, gdn_outputs *out) {
  gdn_error e;
  gdn_error_init(&e);
  oracle_config c;
  oracle_config_init(&c);
  gdn_outputs_init(out);
  ck_assert_int_eq(oracle_run(in, &c, out, &e), GDN_OK);
}

typedef enum { K_SCAN, K_RECURRENT, K_AFFINE } kind;

static void run(kind k, const gdn_inputs *in, gdn_dtype dt, int64_t C, int64_t D, gdn_outputs *out) {
  gdn_error e;
  gdn_error_init(&e);
  /* token sharding (upstream's) wherever D divides T, array_split otherwise */
  kern_config c = tkc_cfg(dt, C, D, in->shape.T % D ? KERN_SHARD_CHUNKS : KERN_SHARD_TOKENS);
  gdn_outputs_init(out);
  int rc = k == K_SCAN ? kern_scan(in, &c, out, &e)
           : k == K_RECURRENT ? kern_recurrent(in, &c, out, &e)
                              : kern_affine_prefix(in, &c, out, &e);
  ck_assert_msg(rc == GDN_OK, "kernel failed: %s", e.msg);
}

/* Input variants: slow gates make state cross every device boundary; init
 * gates are the model's; h0, grouped heads, T not a multiple of C. */
static const struct { gdn_shape s; unsigned flags; } variants[] = {
    {{1, 100, 1, 2, 16, 12}, GDN_SYNTH_SLOW_GATES | GDN_SYNTH_H0},
    {{2, 77, 2, 2, 8, 8}, 0},
    {{1, 130, 2, 4, 16, 16}, GDN_SYNTH_SLOW_GATES | GDN_SYNTH_QK_PRENORM},
};

/* float64: every kernel within 1e-13 relative (Frobenius) of the oracle.
 * Measured ~1e-15 (a few u = 1.1e-16, growth over <= 130 tokens and inner
 * dimensions <= 64); 1e-13 is ~900 u, the "about 1e-13". */
START_TEST(float64_kernels_match_oracle) {
  int v = _i;
  gdn_inputs in;
  tsu_synth(&in, variants[v].s, variants[v].flags, 11 + v);
  gdn_outputs ref, x;
  oracle(&in, &ref);
  static const int64_t Cs[] = {1, 4, 16, 64};
  static const int64_t Ds[] = {1, 2, 3, 4, 8};
  double worst = 0;
  run(K_RECURRENT, &in, GDN_DTYPE_F64, 64, 1, &x);
  relerr r = rel(&x, &ref);
  ck_assert_msg(r.o < 1e-13 && r.ht < 1e-13, "recurrent: %g %g", r.o, r.ht);
  gdn_outputs_clear(&x);
  for (size_t ci = 0; ci < 4; ci++) {
    int64_t N = gdn_shape_chunks(&in.shape, Cs[ci]);
    run(K_SCAN, &in, GDN_DTYPE_F64, Cs[ci], 1, &x);
    r = rel(&x, &ref);
    ck_assert_msg(r.o < 1e-13 && r.ht < 1e-13, "scan C=%ld: %g %g", (long)Cs[ci], r.o, r.ht);
    worst = fmax(worst, fmax(r.o, r.ht));
    gdn_outputs_clear(&x);
    for (size_t di = 0; di < 5; di++) {
      if (Ds[di] > N) continue;
      run(K_AFFINE, &in, GDN_DTYPE_F64, Cs[ci], Ds[di], &x);
      r = rel(&x, &ref);
      ck_assert_msg(r.o < 1e-13 && r.ht < 1e-13, "affine C=%ld D=%ld: %g %g", (long)Cs[ci],
                    (long)Ds[di], r.o, r.ht);
      worst = fmax(worst, fmax(r.o, r.ht));
      gdn_outputs_clear(&x);
    }
  }
  fprintf(stderr, "variant %d: float64 worst rel_fro %.3g (bound 1e-13)\n", v, worst);
  gdn_outputs_clear(&ref);
  gdn_inputs_clear(&in);
}
END_TEST

/* float32: scan and affine-prefix within 64 u = 3.8e-6 relative of the
 * oracle.  Why 64 u: each chunk chains about five products with inner
 * dimension <= max(C, Dk) = 64 here; with fma accumulation the typical
 * (probabilistic) error of one is ~sqrt(64) u = 8 u, and the contractive
 * recurrence (every factor has norm <= 1) stops errors from compounding
 * across chunks beyond the gates' memory.  Measured 3-6 u; 64 u leaves
 * room for unlucky seeds while still catching any real defect (a wrong
 * composition order costs O(1), see the gate test). */
START_TEST(float32_kernels_within_bound) {
  int v = _i;
  gdn_inputs in;
  tsu_synth(&in, variants[v].s, variants[v].flags, 21 + v);
  gdn_outputs ref, x;
  oracle(&in, &ref);
  const double bound = 64 * ldexp(1, -24);
  double worst = 0;
  static const int64_t Cs[] = {4, 16, 64};
  for (size_t ci = 0; ci < 3; ci++) {
    int64_t N = gdn_shape_chunks(&in.shape, Cs[ci]);
    for (int64_t D = 1; D <= 8 && D <= N; D = D * 2 + (D == 2)) {
      run(D == 1 ? K_SCAN : K_AFFINE, &in, GDN_DTYPE_F32, Cs[ci], D, &x);
      relerr r = rel(&x, &ref);
      ck_assert_msg(r.o < bound && r.ht < bound, "C=%ld D=%ld: %g %g (bound %g)", (long)Cs[ci],
                    (long)D, r.o, r.ht, bound);
      worst = fmax(worst, fmax(r.o, r.ht));
      gdn_outputs_clear(&x);
    }
  }
  fprintf(stderr, "variant %d: float32 worst rel_fro %.3g = %.1f u (bound 64 u)\n", v, worst,
          worst / ldexp(1, -24));
  gdn_outputs_clear(&ref);
  gdn_inputs_clear(&in);
}
END_TEST

/* Threads change nothing: oracle and kernels bit-identical for 1 and 2. */
START_TEST(thread_count_does_not_change_results) {
  gdn_inputs in;
  tsu_synth(&in, variants[0].s, variants[0].flags, 5);
  gdn_outputs a, b, c, d;
  gdn_threads_set(1);
  oracle(&in, &a);
  run(K_AFFINE, &in, GDN_DTYPE_F32, 16, 3, &c);
  gdn_threads_set(2);
  oracle(&in, &b);
  run(K_AFFINE, &in, GDN_DTYPE_F32, 16, 3, &d);
  size_t no = gdn_shape_numel_v(&in.shape) * sizeof(double);
  size_t nh = gdn_shape_numel_state(&in.shape) * sizeof(double);
  ck_assert(memcmp(a.o, b.o, no) == 0 && memcmp(a.ht, b.ht, nh) == 0);
  ck_assert(memcmp(c.o, d.o, no) == 0 && memcmp(c.ht, d.ht, nh) == 0);
  gdn_outputs_clear(&a);
  gdn_outputs_clear(&b);
  gdn_outputs_clear(&c);
  gdn_outputs_clear(&d);
  gdn_inputs_clear(&in);
}
END_TEST

/* Packed documents (--documents, --packing): every kernel against the MPFR
 * oracle with the same semantics, 6 documents on T = 192 (boundaries on a
 * seam, a chunk edge, inside a chunk; a padding tail).  float64 within
 * 1e-13 as above; float32 within the 64 u bound above.  Negative control:
 * the kernels under the other semantics are off by far more (> 1e-3). */
START_TEST(packed_documents_match_oracle) {
  for (int packing = 0; packing < 2; packing++) {
    gdn_inputs in;
    tsu_synth(&in, (gdn_shape){1, 192, 1, 2, 16, 12}, GDN_SYNTH_SLOW_GATES | GDN_SYNTH_H0, 31);
    gdn_error e;
    gdn_error_init(&e);
    ck_assert_int_eq(gdn_synth_segments(&in, 31, 6, &e), GDN_OK);
    in.packing = packing;
    gdn_outputs ref, x;
    oracle(&in, &ref);
    static const int64_t Ds[] = {1, 2, 3, 4, 8};
    for (int dt = 0; dt < 2; dt++) {
      const double bound = dt ? 64 * ldexp(1, -24) : 1e-13;
      const gdn_dtype d = dt ? GDN_DTYPE_F32 : GDN_DTYPE_F64;
      run(K_RECURRENT, &in, d, 64, 1, &x);
      relerr r = rel(&x, &ref);
      ck_assert_msg(r.o < bound && r.ht < bound, "recurrent %d: %g %g", dt, r.o, r.ht);
      gdn_outputs_clear(&x);
      for (int64_t C = 16; C <= 64; C *= 4)
        for (size_t di = 0; di < 5; di++) {
          run(Ds[di] == 1 ? K_SCAN : K_AFFINE, &in, d, C, Ds[di], &x);
          r = rel(&x, &ref);
          ck_assert_msg(r.o < bound && r.ht < bound, "packing %d dtype %d C=%ld D=%ld: %g %g",
                        packing, dt, (long)C, (long)Ds[di], r.o, r.ht);
          gdn_outputs_clear(&x);
        }
    }
    in.packing = !packing; /* negative control */
    run(K_AFFINE, &in, GDN_DTYPE_F64, 16, 4, &x);
    ck_assert(rel(&x, &ref).o > 1e-3);
    gdn_outputs_clear(&x);
    gdn_outputs_clear(&ref);
    gdn_inputs_clear(&in);
  }
}
END_TEST

int main(void) {
  Suite *su = suite_create("vs_oracle");
  TCase *tc = CKR_TCASE(su, "vs_oracle", 240, thread_count_does_not_change_results, packed_documents_match_oracle);
  tcase_add_loop_test(tc, float64_kernels_match_oracle, 0, 3);
  tcase_add_loop_test(tc, float32_kernels_within_bound, 0, 3);
  return ckr_run(su);
}
