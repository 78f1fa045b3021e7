/* The numerics modes of the KDA forward kernels (kern_kda.h, Numerics):
 * the token loop, the chunked kernel and the affine-prefix in float32 with
 * each matmul mode, in bfloat16 compute and in float64, with and without
 * FTZ, against the float64 token loop.  Asserted ranges (measured at this
 * shape, seed 51, and over seeds 1 to 5 by the sweep, docs/numerics.md):
 *   highest       within 2e-6 (float32's own 2e-7 .. 7e-7: 6 passes keep
 *                 float32's products)
 *   high          1e-6 .. 2^-13 (3 passes: ~2e-5; not float32's, so the
 *                 mode is applied)
 *   default       1e-4 .. 2^-6 (1 pass, operands in bfloat16: ~4e-3)
 *   bfloat16      1e-4 .. 2^-6 (inputs rounded to bfloat16: ~4e-3)
 *   float64       within 1e-12
 * FTZ with normal inputs changes no bit; negative control: the
 * gate-value-axis mutant exceeds 2^-6 in every mode.  (The backwards in
 * these modes: test_kda_grad_modes.) */
#include <check.h>
#include <math.h>
#include <string.h>

#include "../check_runner.h"
#include "../test_util_synth.h"
#include "gdn_chgate.h"
#include "kern_kda.h"

static const gdn_shape SHAPE = {1, 128, 1, 2, 32, 24};

typedef struct problem {
  gdn_inputs in;
  gdn_chgate g;
} problem;

static problem make(uint64_t seed) {
  problem p;
  p.in = tsu_inputs(SHAPE, GDN_SYNTH_H0, seed);
  gdn_chgate_init(&p.g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&p.g, &SHAPE, seed, &e), GDN_OK);
  return p;
}

/* kind 0 token loop, 1 chunked (C = 32), 2 affine-prefix (C = 32, D = 2, hillis-steele: two chunks a device) */
static gdn_outputs run(const problem *p, int kind, gdn_dtype dt, kern_matmul mm, int ftz, kern_kda_mutant m) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = dt;
  cfg.matmul = mm;
  cfg.ftz = ftz;
  cfg.chunk = 32;
  if (kind == 2) cfg.devices = 2, cfg.prefix = KERN_PREFIX_HILLIS_STEELE;
  gdn_outputs out;
  gdn_outputs_init(&out);
  gdn_error e;
  gdn_error_init(&e);
  const int rc = kind == 0   ? kern_kda_recurrent(&p->in, &p->g, &cfg, m, &out, &e)
                 : kind == 1 ? kern_kda_chunk(&p->in, &p->g, &cfg, m, &out, &e)
                             : kern_kda_affine(&p->in, &p->g, &cfg, m, &out, &e);
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  return out;
}

static double rel(const double *x, const double *r, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(x[i] - r[i])), m = fmax(m, fabs(r[i]));
  return isnan(d) ? INFINITY : d / m;
}

static double err(const gdn_outputs *x, const gdn_outputs *r) {
  return fmax(rel(x->o, r->o, gdn_shape_numel_v(&SHAPE)), rel(x->ht, r->ht, gdn_shape_numel_state(&SHAPE)));
}

static int same(const gdn_outputs *a, const gdn_outputs *b) {
  return !memcmp(a->o, b->o, gdn_shape_numel_v(&SHAPE) * sizeof(double)) &&
         !memcmp(a->ht, b->ht, gdn_shape_numel_state(&SHAPE) * sizeof(double));
}

typedef struct mode {
  gdn_dtype dt;
  kern_matmul mm;
  double lo, hi;
} mode;

static const mode MODES[] = {
    {GDN_DTYPE_F32, KERN_MATMUL_HIGHEST, 1e-8, 2e-6}, {GDN_DTYPE_F32, KERN_MATMUL_HIGH, 1e-6, 0x1p-13},
    {GDN_DTYPE_F32, KERN_MATMUL_DEFAULT, 1e-4, 0x1p-6}, {GDN_DTYPE_BF16, KERN_MATMUL_IEEE, 1e-4, 0x1p-6},
    {GDN_DTYPE_BF16, KERN_MATMUL_DEFAULT, 1e-4, 0x1p-6}, {GDN_DTYPE_F64, KERN_MATMUL_IEEE, 0, 1e-12},
};

/* _i: mode; every kernel, then the mutant */
START_TEST(test_mode_errors) {
  problem p = make(51);
  gdn_outputs ref = run(&p, 0, GDN_DTYPE_F64, KERN_MATMUL_IEEE, 0, KERN_KDA_MUTANT_NONE);
  const mode *md = &MODES[_i];
  for (int kind = 0; kind < 3; kind++) {
    gdn_outputs x = run(&p, kind, md->dt, md->mm, 0, KERN_KDA_MUTANT_NONE);
    const double ex = err(&x, &ref);
    fprintf(stderr, "%s %s kernel %d: %.3e\n", gdn_dtype_name(md->dt), kern_matmul_name(md->mm), kind, ex);
    ck_assert_msg(ex >= md->lo && ex <= md->hi, "%s %s kernel %d: %.3e outside [%.1e, %.1e]",
                  gdn_dtype_name(md->dt), kern_matmul_name(md->mm), kind, ex, md->lo, md->hi);
    if (md->dt != GDN_DTYPE_F64) { /* FTZ: the inputs and states are normal here, no bit moves */
      gdn_outputs f = run(&p, kind, md->dt, md->mm, 1, KERN_KDA_MUTANT_NONE);
      ck_assert(same(&f, &x));
      gdn_outputs_clear(&f);
    }
    gdn_outputs m = run(&p, kind, md->dt, md->mm, 0, KERN_KDA_MUTANT_GATE_VALUE_AXIS);
    const double em = err(&m, &ref);
    ck_assert_msg(em > 0x1p-6, "gate-value-axis under %s %s kernel %d: %.3e", gdn_dtype_name(md->dt),
                  kern_matmul_name(md->mm), kind, em);
    gdn_outputs_clear(&x), gdn_outputs_clear(&m);
  }
  gdn_outputs_clear(&ref);
  gdn_chgate_clear(&p.g);
  gdn_inputs_clear(&p.in);
}
END_TEST

/* float32 ieee is what it was: highest differs from it (the mode is
 * applied) but ieee at D = 1 is the chunked kernel's bits. */
START_TEST(test_ieee_unchanged) {
  problem p = make(52);
  gdn_outputs c = run(&p, 1, GDN_DTYPE_F32, KERN_MATMUL_IEEE, 0, KERN_KDA_MUTANT_NONE);
  gdn_outputs h = run(&p, 1, GDN_DTYPE_F32, KERN_MATMUL_HIGHEST, 0, KERN_KDA_MUTANT_NONE);
  gdn_outputs t = run(&p, 0, GDN_DTYPE_F32, KERN_MATMUL_IEEE, 0, KERN_KDA_MUTANT_NONE);
  gdn_outputs th = run(&p, 0, GDN_DTYPE_F32, KERN_MATMUL_HIGH, 0, KERN_KDA_MUTANT_NONE);
  ck_assert(!same(&c, &h));
  ck_assert(!same(&t, &th));
  gdn_outputs_clear(&c), gdn_outputs_clear(&h), gdn_outputs_clear(&t), gdn_outputs_clear(&th);
  gdn_chgate_clear(&p.g);
  gdn_inputs_clear(&p.in);
}
END_TEST

int main(void) {
  Suite *su = suite_create("kernels");
  TCase *tc = tcase_create("kda_modes");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_mode_errors, 0, (int)(sizeof MODES / sizeof MODES[0]));
  tcase_add_test(tc, test_ieee_unchanged);
  suite_add_tcase(su, tc);
  return ckr_run(su);
}
