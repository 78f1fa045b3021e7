/* Outputs held in their own dtype (parity_vals.h, kern_out.h):
 *   - a float32 or bfloat16 kernel asked for it (f32_ok) holds o as float32,
 *     and every value is the one the same kernel stores as binary64 without
 *     it (bit for bit, all three kernels); a float64 kernel keeps binary64;
 *   - every metric reads either form and gives bit for bit the result it
 *     gives on the same values held as binary64;
 *   - buffers are reused in their form across calls, and a change of form
 *     reallocates.
 * Each check has a negative control: one value off by one float32 ULP is
 * caught by the same comparison. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_bf16.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "kern.h"
#include "kern_out.h"
#include "parity_metrics.h"
#include "../check_runner.h"

static const gdn_shape shape = {2, 80, 2, 2, 16, 8}; /* T not a multiple of C = 16 */

typedef int (*kern_fn)(const gdn_inputs *, const kern_config *, gdn_outputs *, gdn_error *);
static int run_affine(const gdn_inputs *in, const kern_config *c, gdn_outputs *o, gdn_error *e) {
  return kern_affine_prefix(in, c, o, e);
}

/* Elements where the float32-held o differs from the binary64-held one
 * (compared as binary64 bit patterns). */
static size_t o_mismatches(const gdn_outputs *f, const gdn_outputs *d) {
  size_t n = (size_t)gdn_shape_numel_v(&d->shape), bad = 0;
  for (size_t i = 0; i < n; i++) {
    double v = (double)f->o32[i];
    bad += memcmp(&v, &d->o[i], sizeof v) != 0;
  }
  return bad;
}

/* Both checks' problem: slow-gate inputs with h0 of `shape` from seed,
 * the inputs of bf16_mask held in bfloat16; chunks of 16 over 5 devices at
 * compute dtype `dtype`; three output slots, initialised (vals_clear frees
 * them with the inputs). */
typedef struct {
  gdn_inputs in;
  kern_config cfg;
  gdn_outputs out[3];
  gdn_error e;
} vals;

static void vals_init(vals *v, uint64_t seed, unsigned bf16_mask, gdn_dtype dtype) {
  gdn_error_init(&v->e);
  gdn_inputs_init(&v->in);
  gdn_synth_opts so = {seed, GDN_SYNTH_SLOW_GATES | GDN_SYNTH_H0, bf16_mask};
  ck_assert_int_eq(gdn_synth_generate(&v->in, &shape, &so, &v->e), GDN_OK);
  kern_config_init(&v->cfg);
  v->cfg.chunk = 16;
  v->cfg.devices = 5;
  v->cfg.dtype = dtype;
  for (int k = 0; k < 3; k++) gdn_outputs_init(&v->out[k]);
}

static void vals_clear(vals *v) {
  for (int k = 0; k < 3; k++) gdn_outputs_clear(&v->out[k]);
  gdn_inputs_clear(&v->in);
}

static void check_kernel(kern_fn fn, gdn_dtype dtype, unsigned bf16_mask, gdn_dtype want_out) {
  vals v;
  vals_init(&v, 11, bf16_mask, dtype);
  gdn_outputs *d = &v.out[0], *f = &v.out[1];
  f->f32_ok = 1;
  ck_assert_msg(fn(&v.in, &v.cfg, d, &v.e) == GDN_OK, "%s", v.e.msg);
  ck_assert_msg(fn(&v.in, &v.cfg, f, &v.e) == GDN_OK, "%s", v.e.msg);
  ck_assert_int_eq(f->dtype, want_out);
  ck_assert_int_eq(d->dtype, want_out);
  ck_assert_mem_eq(f->ht, d->ht, (size_t)gdn_shape_numel_state(&shape) * sizeof(double));
  if (want_out == GDN_DTYPE_F64) { /* binary64 values stay binary64 */
    ck_assert(f->o32 == NULL && f->o != NULL);
    ck_assert_mem_eq(f->o, d->o, (size_t)gdn_shape_numel_v(&shape) * sizeof(double));
  } else {
    ck_assert(f->o32 != NULL && f->o == NULL && d->o32 == NULL);
    ck_assert_uint_eq(o_mismatches(f, d), 0);
    /* Negative control: one value one float32 ULP off is seen. */
    f->o32[37] = nextafterf(f->o32[37], INFINITY);
    ck_assert_uint_eq(o_mismatches(f, d), 1);
  }
  vals_clear(&v);
}

/* With a code base (a binary64 reference of the same shape), a float32 o
 * is held as codes that decode to the float32-held o bit for bit, at 1 and
 * 2 threads and with ftz (the kernels write under FTZ/DAZ then); a
 * bfloat16-rounded or binary64 o is not coded. */
static void check_coded(kern_fn fn, gdn_dtype dtype, unsigned bf16_mask, int ftz, int threads) {
  vals v;
  vals_init(&v, 13, bf16_mask, GDN_DTYPE_F64);
  gdn_outputs *ref = &v.out[0], *f = &v.out[1], *c = &v.out[2];
  ck_assert_msg(kern_recurrent(&v.in, &v.cfg, ref, &v.e) == GDN_OK, "%s", v.e.msg); /* the base */
  v.cfg.dtype = dtype;
  v.cfg.ftz = ftz;
  gdn_threads_set(threads);
  f->f32_ok = c->f32_ok = 1;
  c->code_base = ref->o;
  ck_assert_msg(fn(&v.in, &v.cfg, f, &v.e) == GDN_OK, "%s", v.e.msg);
  ck_assert_msg(fn(&v.in, &v.cfg, c, &v.e) == GDN_OK, "%s", v.e.msg);
  const size_t n = (size_t)gdn_shape_numel_v(&shape);
  ck_assert_mem_eq(c->ht, f->ht, (size_t)gdn_shape_numel_state(&shape) * sizeof(double));
  if (c->dtype != GDN_DTYPE_F32) { /* bfloat16-rounded or binary64 values: not coded */
    ck_assert(c->oc.c == NULL && (c->o32 != NULL || c->o != NULL));
  } else {
    ck_assert(c->oc.c != NULL && c->o32 == NULL && c->o == NULL);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += gdn_f32_bits(gdn_ocode_value(&c->oc, i)) != gdn_f32_bits(f->o32[i]);
    ck_assert_uint_eq(bad, 0);
    if (dtype == GDN_DTYPE_F32) /* float32 compute: near the reference (bfloat16 compute is not, and
                                   the harness does not ask codes for it: parity_subject.c) */
      ck_assert_msg(c->oc.n_far < n / 4, "%zu exceptions of %zu (dtype %d, ftz %d, %d threads)", c->oc.n_far, n, (int)dtype, ftz, threads); /* near the reference: few */
    /* Negative control: one code changed is one value changed. */
    size_t i = 0;
    while (c->oc.c[i] == GDN_OCODE_EXC || c->oc.c[i] == GDN_OCODE_SIDE) i++;
    c->oc.c[i] ^= 1;
    ck_assert(gdn_f32_bits(gdn_ocode_value(&c->oc, i)) != gdn_f32_bits(f->o32[i]));
  }
  gdn_threads_set(0);
  vals_clear(&v);
}

START_TEST(kernels_hold_o_as_codes) {
  kern_fn fns[3] = {kern_scan, run_affine, kern_recurrent};
  for (int k = 0; k < 3; k++)
    for (int t = 1; t <= 2; t++) {
      check_coded(fns[k], GDN_DTYPE_F32, 0, 0, t);
      check_coded(fns[k], GDN_DTYPE_F32, 0, 1, t);
      check_coded(fns[k], GDN_DTYPE_F32, GDN_T_Q, 0, t); /* o rounded to bfloat16: not coded */
      check_coded(fns[k], GDN_DTYPE_BF16, 0, 1, t);
      check_coded(fns[k], GDN_DTYPE_F64, 0, 0, t);
    }
}
END_TEST

START_TEST(kernels_hold_o_in_their_dtype) {
  kern_fn fns[3] = {kern_scan, run_affine, kern_recurrent};
  for (int k = 0; k < 3; k++) {
    check_kernel(fns[k], GDN_DTYPE_F32, 0, GDN_DTYPE_F32);
    check_kernel(fns[k], GDN_DTYPE_F32, GDN_T_Q, GDN_DTYPE_BF16); /* o rounded to bfloat16 */
    check_kernel(fns[k], GDN_DTYPE_BF16, 0, GDN_DTYPE_F32);
    check_kernel(fns[k], GDN_DTYPE_F64, 0, GDN_DTYPE_F64);
  }
}
END_TEST

/* Every metric of a pair held as float32 (x; r too, or r as binary64)
 * against the same values held as binary64: the same bits. */
typedef struct all_metrics {
  parity_metrics m;
  double prof[8], map[8], rows, allclose;
} all_metrics;

static void measure(parity_vals x, parity_vals r, const int64_t dims[4], all_metrics *a) {
  gdn_error e;
  gdn_error_init(&e);
  const int64_t bl[4] = {1, 5, 1, 4};
  memset(a, 0, sizeof *a);
  ck_assert_int_eq(parity_metrics_compute_v(x, r, dims, GDN_DTYPE_F32, &a->m, &e), GDN_OK);
  ck_assert_int_eq(parity_metrics_blocks_v(x, r, dims, bl, &a->m, &e), GDN_OK);
  parity_profile_o_v(x, r, dims, 5, a->prof);
  ck_assert_int_eq(parity_block_map_o_v(x, r, dims, 5, a->m.rel_floor, 2, a->map, &e), GDN_OK);
  a->rows = parity_max_abs_rows_v(x, r, dims, 3, 17);
  a->allclose = parity_allclose_ratio_v(x, r, (size_t)a->m.n, 1e-6, 1e-6);
}

START_TEST(metrics_read_either_form) {
  const int64_t dims[4] = {2, 20, 2, 8}; /* profile 4 blocks, map 2 heads x 2 bins */
  const size_t n = 2 * 20 * 2 * 8;
  float *xf = malloc(n * sizeof *xf), *rf = malloc(n * sizeof *rf);
  double *xd = malloc(n * sizeof *xd), *rd = malloc(n * sizeof *rd), *r64 = malloc(n * sizeof *r64);
  srand(7);
  for (size_t i = 0; i < n; i++) {
    r64[i] = (rand() / (double)RAND_MAX - 0.5) * ldexp(1, (int)(i % 9) - 4);
    rf[i] = (float)r64[i];
    xf[i] = i % 5 ? nextafterf(rf[i], (float)(i % 3) - 1.0f) : rf[i]; /* some exact, some one ULP off */
    xd[i] = xf[i];
    rd[i] = rf[i];
  }
  xf[n / 2] = xd[n / 2] = 0, rf[n / 2] = rd[n / 2] = 0; /* a zero reference */
  for (int nt = 1; nt <= 2; nt++) {
    gdn_threads_set(nt);
    all_metrics a, b;
    measure(parity_vals_f32(xf), parity_vals_f32(rf), dims, &a); /* both float32 */
    measure(parity_vals_f64(xd), parity_vals_f64(rd), dims, &b);
    ck_assert_mem_eq(&a, &b, sizeof a);
    ck_assert(a.m.max_ulp > 0 && a.m.rel_fro > 0); /* the pair really differs */
    measure(parity_vals_f32(xf), parity_vals_f64(r64), dims, &a); /* against a binary64 reference */
    measure(parity_vals_f64(xd), parity_vals_f64(r64), dims, &b);
    ck_assert_mem_eq(&a, &b, sizeof a);
    /* Codes against the binary64 reference (x) and against the float32 one
     * rounded (r, as a scan's o coded against the oracle's): the same bits. */
    gdn_ocode xc, rc;
    gdn_ocode_init(&xc);
    gdn_ocode_init(&rc);
    gdn_error e;
    gdn_error_init(&e);
    ck_assert_int_eq(gdn_ocode_alloc(&xc, n, r64, &e), GDN_OK);
    ck_assert_int_eq(gdn_ocode_alloc(&rc, n, r64, &e), GDN_OK);
    gdn_ocode_local lx = {0}, lr = {0};
    for (size_t i = 0; i < n; i++) {
      gdn_ocode_put(&xc, i, xf[i], &lx);
      gdn_ocode_put(&rc, i, rf[i], &lr);
    }
    gdn_ocode_flush(&xc, &lx);
    gdn_ocode_flush(&rc, &lr);
    ck_assert_int_eq(gdn_ocode_finish(&xc, &e), GDN_OK);
    ck_assert_int_eq(gdn_ocode_finish(&rc, &e), GDN_OK);
    measure(parity_vals_coded(&xc), parity_vals_f64(r64), dims, &a);
    ck_assert_mem_eq(&a, &b, sizeof a);
    all_metrics c, d;
    measure(parity_vals_coded(&xc), parity_vals_coded(&rc), dims, &c); /* affine vs scan, both coded */
    measure(parity_vals_f64(xd), parity_vals_f64(rd), dims, &d);
    ck_assert_mem_eq(&c, &d, sizeof c);
    gdn_ocode_clear(&xc);
    gdn_ocode_clear(&rc);
    /* Negative control: x off by one more float32 ULP in one element. */
    float keep = xf[41];
    xf[41] = nextafterf(xf[41], INFINITY);
    measure(parity_vals_f32(xf), parity_vals_f64(r64), dims, &a);
    ck_assert(memcmp(&a, &b, sizeof a) != 0);
    xf[41] = keep;
  }
  free(xf), free(rf), free(xd), free(rd), free(r64);
}
END_TEST

START_TEST(buffers_reused_in_their_form) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs o;
  gdn_outputs_init(&o);
  o.f32_ok = 1;
  ck_assert_int_eq(kern_out_alloc(&o, &shape, GDN_DTYPE_F32, &e), GDN_OK);
  float *p = o.o32;
  ck_assert(p != NULL && o.o == NULL);
  ck_assert_int_eq(kern_out_alloc(&o, &shape, GDN_DTYPE_BF16, &e), GDN_OK);
  ck_assert(o.o32 == p); /* same size and form: reused */
  ck_assert_int_eq(kern_out_alloc(&o, &shape, GDN_DTYPE_F64, &e), GDN_OK);
  ck_assert(o.o32 == NULL && o.o != NULL); /* binary64 values: binary64 */
  gdn_outputs_clear(&o);
  ck_assert(o.f32_ok && !o.o && !o.o32 && !o.ht); /* the request survives clear */
  o.f32_ok = 0;
  ck_assert_int_eq(kern_out_alloc(&o, &shape, GDN_DTYPE_F32, &e), GDN_OK);
  ck_assert(o.o32 == NULL && o.o != NULL); /* not asked: binary64 as before */
  /* codes when asked, for float32 values only */
  static double base[2 * 80 * 2 * 8];
  o.f32_ok = 1;
  o.code_base = base;
  ck_assert_int_eq(kern_out_alloc(&o, &shape, GDN_DTYPE_F32, &e), GDN_OK);
  ck_assert(o.oc.c != NULL && o.oc.base == base && o.o32 == NULL && o.o == NULL);
  int8_t *pc = o.oc.c;
  ck_assert_int_eq(kern_out_alloc(&o, &shape, GDN_DTYPE_F32, &e), GDN_OK);
  ck_assert(o.oc.c == pc); /* same size and form: reused */
  ck_assert_int_eq(kern_out_alloc(&o, &shape, GDN_DTYPE_BF16, &e), GDN_OK);
  ck_assert(o.oc.c == NULL && o.o32 != NULL); /* bfloat16 values: float32 */
  gdn_outputs_clear(&o);
  ck_assert(o.code_base == base && !o.oc.c); /* the request survives clear */
  gdn_outputs_clear(&o);
}
END_TEST

CKR_MAIN("vals", "core", 120, kernels_hold_o_in_their_dtype, kernels_hold_o_as_codes, metrics_read_either_form,
    buffers_reused_in_their_form)
