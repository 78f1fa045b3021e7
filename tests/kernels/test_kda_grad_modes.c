/* The numerics modes of the KDA backwards (kern_kda_vjp.h,
 * kern_kda_chunk_vjp.h, Modes): the token loop's, the chunked kernel's and
 * the affine-prefix's backward (token by token and by the chunkwise
 * algebra) in float32 with each matmul mode, in bfloat16 compute and with
 * FTZ, against the float64 token loop's backward, at 1,128 Hk 1 Hv 2 Dk 32
 * Dv 24 (seed 61, Kimi's gates, h0 and dht; C = 64, D = 2).
 *   pinned        float32 ieee (and float64) gradients hash to what they
 *                 were before the modes: the modes leave them alone
 *   applied       every mode changes the float32 ieee gradients' bits (a
 *                 backward that ignored the mode would fail this); with
 *                 bfloat16 compute every dv and dbeta is a bfloat16 value
 *                 (their casts' transposes), in float32 not
 *   errors        each gradient's normwise error (max |x - r| / max |r|)
 *                 in the mode's range: highest within 4e-6 (measured up to
 *                 1.0e-6 at C = 64, float32 ieee's own size), high 1e-7 ..
 *                 2^-13 (measured 1.2e-5 to 5.8e-5), default and bfloat16
 *                 1e-4 .. 2^-6 (2.2e-3 to 8.8e-3; docs/numerics.md, "KDA
 *                 backward in the numerics modes")
 *   mutants       dg-value-axis exceeds 2^-6 on dg in every mode and form;
 *                 dh-seam-dropped on the affine-prefix (D = 2) exceeds 2^-6
 *                 on dh0 in every mode.
 * FTZ with normal inputs and cotangents changes no bit. */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"
#include "../test_util_synth.h"
#include "gdn_bf16.h"
#include "gdn_chgate.h"
#include "gdn_chgrads.h"
#include "kern_kda.h"
#include "kern_kda_chunk_vjp.h"

static const gdn_shape SHAPE = {1, 128, 1, 2, 32, 24};
enum { N_FORMS = 5 };
static const char *const FORM[N_FORMS] = {"token", "chunk", "chunk-algebra", "affine", "affine-algebra"};

typedef struct problem {
  gdn_inputs in;
  gdn_chgate g;
  gdn_cotangents ct;
} problem;

static problem make(uint64_t seed) {
  problem p;
  p.in = tsu_inputs(SHAPE, GDN_SYNTH_H0, seed);
  gdn_chgate_init(&p.g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&p.g, &SHAPE, seed, &e), GDN_OK);
  p.ct = tsu_cotangents(&SHAPE, 1, seed + 1);
  return p;
}

static void problem_clear(problem *p) {
  gdn_cotangents_clear(&p->ct);
  gdn_chgate_clear(&p->g);
  gdn_inputs_clear(&p->in);
}

/* form: FORM[]; the chunked forms at chunk C (the pins 32; the modes 64:
 * four sub-chunks, so every block against earlier sub-chunks is taken
 * back), the affine ones D = 2 (hillis-steele) */
static int64_t CHUNK = 32;
static gdn_grads run(const problem *p, int form, gdn_dtype dt, kern_matmul mm, int ftz, kern_kda_vjp_mutant m) {
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = dt, cfg.matmul = mm, cfg.ftz = ftz, cfg.chunk = CHUNK;
  if (form >= 3) cfg.devices = 2, cfg.prefix = KERN_PREFIX_HILLIS_STEELE;
  gdn_grads g;
  gdn_grads_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  int (*const f[N_FORMS])(const gdn_inputs *, const gdn_chgate *, const gdn_cotangents *, const kern_config *,
                          kern_kda_vjp_mutant, gdn_grads *, gdn_error *) = {
      kern_kda_recurrent_vjp, kern_kda_chunk_vjp, kern_kda_chunk_vjp_algebra, kern_kda_affine_vjp,
      kern_kda_affine_vjp_algebra};
  const int rc = f[form](&p->in, &p->g, &p->ct, &cfg, m, &g, &e);
  ck_assert_msg(rc == GDN_OK, "%s: %s", FORM[form], e.msg);
  return g;
}

static double rel(const double *x, const double *r, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(x[i] - r[i])), m = fmax(m, fabs(r[i]));
  return isnan(d) ? INFINITY : d / m;
}

static double grad_err(const gdn_grads *x, const gdn_grads *r, gdn_grad_id id) {
  return rel(gdn_grads_tensor_c(x, id), gdn_grads_tensor_c(r, id), gdn_chgrads_numel(&SHAPE, id));
}

static double worst(const gdn_grads *x, const gdn_grads *r) {
  double w = 0;
  for (int id = 0; id < GDN_GRADS_N; id++) w = fmax(w, grad_err(x, r, (gdn_grad_id)id));
  return w;
}

/* FNV-1a over every gradient's doubles. */
static uint64_t grads_hash(const gdn_grads *g) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int id = 0; id < GDN_GRADS_N; id++) {
    const unsigned char *b = (const unsigned char *)gdn_grads_tensor_c(g, (gdn_grad_id)id);
    const size_t n = gdn_chgrads_numel(&SHAPE, (gdn_grad_id)id) * sizeof(double);
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  }
  return h;
}

static int same(const gdn_grads *a, const gdn_grads *b) { return grads_hash(a) == grads_hash(b); }

/* Every element of gradient id is a bfloat16 value. */
static int all_bf16(const gdn_grads *g, gdn_grad_id id) {
  const double *x = gdn_grads_tensor_c(g, id);
  for (size_t i = 0; i < gdn_chgrads_numel(&SHAPE, id); i++)
    if ((double)gdn_bf16_round((float)x[i]) != x[i]) return 0;
  return 1;
}

/* The float32 ieee and float64 gradients' hashes, as the backwards computed
 * them before the modes (seed 61; TEST_KDA_GRAD_PINS=1 prints them). */
static const uint64_t PIN_F32[N_FORMS] = {0xd85087d76fc10f2dull, 0x3812ba6980c5eb74ull, 0x0bd766d67dd391f8ull,
                                          0x20b6114d55fbfa19ull, 0xa5594496490d5c82ull};
static const uint64_t PIN_F64[N_FORMS] = {0x6e22a45787bca57dull, 0x04c1a95829526000ull, 0xf6ebe5308dcd7d6cull,
                                          0x682519e7643abf0cull, 0x07d0f42f7cae9074ull};

START_TEST(test_ieee_pinned) {
  CHUNK = 32;
  problem p = make(61);
  const int print = getenv("TEST_KDA_GRAD_PINS") != NULL;
  for (int form = 0; form < N_FORMS; form++)
    for (int f64 = 0; f64 < 2; f64++) {
      gdn_grads g = run(&p, form, f64 ? GDN_DTYPE_F64 : GDN_DTYPE_F32, KERN_MATMUL_IEEE, 0, KERN_KDA_VJP_MUTANT_NONE);
      const uint64_t h = grads_hash(&g), pin = f64 ? PIN_F64[form] : PIN_F32[form];
      if (print) fprintf(stderr, "%s %s 0x%016" PRIx64 "ull\n", FORM[form], f64 ? "f64" : "f32", h);
      else ck_assert_msg(h == pin, "%s %s: 0x%016" PRIx64 ", pinned 0x%016" PRIx64, FORM[form], f64 ? "f64" : "f32",
                         h, pin);
      gdn_grads_clear(&g);
    }
  problem_clear(&p);
}
END_TEST

typedef struct mode {
  gdn_dtype dt;
  kern_matmul mm;
  double lo, hi;
} mode;

static const mode MODES[] = {
    {GDN_DTYPE_F32, KERN_MATMUL_HIGHEST, 1e-8, 4e-6},  {GDN_DTYPE_F32, KERN_MATMUL_HIGH, 1e-7, 0x1p-13},
    {GDN_DTYPE_F32, KERN_MATMUL_DEFAULT, 1e-4, 0x1p-6}, {GDN_DTYPE_BF16, KERN_MATMUL_IEEE, 1e-4, 0x1p-6},
    {GDN_DTYPE_BF16, KERN_MATMUL_DEFAULT, 1e-4, 0x1p-6},
};

/* _i: mode; every form: the mode applied (other bits than ieee float32),
 * its error in range, FTZ moving no bit, the dg-value-axis mutant caught */
START_TEST(test_mode_errors) {
  CHUNK = 64;
  problem p = make(61);
  const mode *md = &MODES[_i];
  gdn_grads ref = run(&p, 0, GDN_DTYPE_F64, KERN_MATMUL_IEEE, 0, KERN_KDA_VJP_MUTANT_NONE);
  for (int form = 0; form < N_FORMS; form++) {
    gdn_grads f32 = run(&p, form, GDN_DTYPE_F32, KERN_MATMUL_IEEE, 0, KERN_KDA_VJP_MUTANT_NONE);
    gdn_grads x = run(&p, form, md->dt, md->mm, 0, KERN_KDA_VJP_MUTANT_NONE);
    ck_assert_msg(!same(&x, &f32), "%s %s %s: the ieee float32 bits", gdn_dtype_name(md->dt), kern_matmul_name(md->mm),
                  FORM[form]);
    const double ex = worst(&x, &ref);
    fprintf(stderr, "%s %s %s:", gdn_dtype_name(md->dt), kern_matmul_name(md->mm), FORM[form]);
    for (int id = 0; id < GDN_GRADS_N; id++)
      fprintf(stderr, " %s %.2e", gdn_grads_name((gdn_grad_id)id), grad_err(&x, &ref, (gdn_grad_id)id));
    fprintf(stderr, "\n");
    ck_assert_msg(ex >= md->lo && ex <= md->hi, "%s %s %s: %.3e outside [%.1e, %.1e]", gdn_dtype_name(md->dt),
                  kern_matmul_name(md->mm), FORM[form], ex, md->lo, md->hi);
    /* bfloat16: the cotangents of v and beta rounded at their casts' transposes */
    const int bf = md->dt == GDN_DTYPE_BF16;
    ck_assert_msg(all_bf16(&x, GDN_GRAD_DV) == bf && all_bf16(&x, GDN_GRAD_DBETA) == bf, "%s %s %s: dv, dbeta",
                  gdn_dtype_name(md->dt), kern_matmul_name(md->mm), FORM[form]);
    gdn_grads f = run(&p, form, md->dt, md->mm, 1, KERN_KDA_VJP_MUTANT_NONE);
    ck_assert(same(&f, &x));
    gdn_grads m = run(&p, form, md->dt, md->mm, 0, KERN_KDA_VJP_MUTANT_DG_VALUE_AXIS);
    const double em = grad_err(&m, &ref, GDN_GRAD_DG);
    ck_assert_msg(em > 0x1p-6, "dg-value-axis under %s %s %s: %.3e", gdn_dtype_name(md->dt), kern_matmul_name(md->mm),
                  FORM[form], em);
    if (form >= 3) { /* the seam's adjoint dropped: dh0 misses everything after device 0 */
      gdn_grads sd = run(&p, form, md->dt, md->mm, 0, KERN_KDA_VJP_MUTANT_DH_SEAM_DROPPED);
      const double es = grad_err(&sd, &ref, GDN_GRAD_DH0);
      ck_assert_msg(es > 0x1p-6, "dh-seam-dropped under %s %s %s: %.3e", gdn_dtype_name(md->dt),
                    kern_matmul_name(md->mm), FORM[form], es);
      gdn_grads_clear(&sd);
    }
    gdn_grads_clear(&f32), gdn_grads_clear(&x), gdn_grads_clear(&f), gdn_grads_clear(&m);
  }
  gdn_grads_clear(&ref);
  problem_clear(&p);
}
END_TEST

int main(void) {
  Suite *su = suite_create("kernels");
  TCase *tc = CKR_TCASE(su, "kda_grad_modes", 300, test_ieee_pinned);
  tcase_add_loop_test(tc, test_mode_errors, 0, (int)(sizeof MODES / sizeof MODES[0]));
  return ckr_run(su);
}
