/* The float backward kernels on their own: determinism, the D = 1 path,
 * refusals, allocation failures. */
#include <check.h>
#include <stdlib.h>

#include "gdn_alloc.h"
#include "gdn_bf16.h"
#include "gdn_threads.h"
#include "kern.h"
#include "vjp_test_util.h"
#include "../check_runner.h"

/* 1, 2 and 3 threads give the same bits, for the scan and for the
 * affine-prefix form on 1, 3 and 4 devices, both shard modes (tokens: T/D =
 * 24 or 18 tokens per device, padded at every seam at C = 16), every prefix
 * schedule, float32 (with and without ftz; ieee, highest, default) and
 * float64, bfloat16 (scan and affine, with and without ftz, default and
 * highest); B Hk = 4 items, so threads really share the work. */
START_TEST(threads_change_nothing) {
  gdn_inputs in = tsu_inputs((gdn_shape){2, 72, 2, 4, 8, 6}, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 5);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 6);
  const kern_shard T_ = KERN_SHARD_TOKENS, C_ = KERN_SHARD_CHUNKS;
  const struct { gdn_dtype dt; int ftz; int64_t D; int affine; kern_matmul mm; kern_shard sh; } cfgs[] = {
      {GDN_DTYPE_F32, 0, 1, 0, KERN_MATMUL_IEEE, T_}, {GDN_DTYPE_F32, 0, 3, 1, KERN_MATMUL_IEEE, C_},
      {GDN_DTYPE_F32, 0, 3, 1, KERN_MATMUL_IEEE, T_}, {GDN_DTYPE_F32, 1, 4, 1, KERN_MATMUL_IEEE, C_},
      {GDN_DTYPE_F32, 1, 4, 1, KERN_MATMUL_IEEE, T_}, {GDN_DTYPE_F64, 0, 1, 0, KERN_MATMUL_IEEE, T_},
      {GDN_DTYPE_F64, 0, 4, 1, KERN_MATMUL_IEEE, T_}, {GDN_DTYPE_F32, 0, 4, 2, KERN_MATMUL_IEEE, C_},
      {GDN_DTYPE_F32, 0, 3, 3, KERN_MATMUL_IEEE, T_},
      {GDN_DTYPE_F32, 1, 4, 1, KERN_MATMUL_HIGHEST, T_}, {GDN_DTYPE_F32, 0, 1, 0, KERN_MATMUL_DEFAULT, C_},
      {GDN_DTYPE_BF16, 0, 1, 0, KERN_MATMUL_DEFAULT, T_}, {GDN_DTYPE_BF16, 1, 4, 1, KERN_MATMUL_DEFAULT, T_},
      {GDN_DTYPE_BF16, 0, 3, 2, KERN_MATMUL_HIGHEST, C_}};
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
    kern_config cfg = vtu_cfg(cfgs[k].dt, 16, cfgs[k].D);
    cfg.shard = cfgs[k].sh;
    cfg.ftz = cfgs[k].ftz;
    cfg.matmul = cfgs[k].mm;
    if (cfgs[k].affine > 1) cfg.prefix = cfgs[k].affine == 2 ? KERN_PREFIX_HILLIS_STEELE : KERN_PREFIX_ASSOCIATIVE_SCAN;
    gdn_grads ref, g;
    gdn_threads_set(1);
    vtu_kern(&in, &ct, &cfg, cfgs[k].affine != 0, &ref);
    for (int th = 2; th <= 3; th++) {
      gdn_threads_set(th);
      vtu_kern(&in, &ct, &cfg, cfgs[k].affine != 0, &g);
      ck_assert_msg(vtu_same(&g, &ref), "config %zu: %d threads differ from 1", k, th);
      gdn_grads_clear(&g);
    }
    gdn_grads_clear(&ref);
  }
  gdn_threads_set(2);
  tsu_problem_clear(&in, &ct);
}
END_TEST

/* The three prefix schedules pair the compositions differently, and the
 * backward follows each pairing: at D = 8 with long memory their float32
 * gradients differ in the last bits (each is held to the oracle in
 * test_vjp_vs_oracle). */
START_TEST(schedules_differ) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 128, 1, 1, 8, 8}, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 8);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 9);
  gdn_grads g[3];
  for (int p = 0; p < 3; p++) {
    kern_config c = vtu_cfg(GDN_DTYPE_F32, 16, 8);
    c.prefix = (kern_prefix)p;
    vtu_kern(&in, &ct, &c, 1, &g[p]);
  }
  ck_assert(!vtu_same(&g[0], &g[1]) && !vtu_same(&g[0], &g[2]) && !vtu_same(&g[1], &g[2]));
  for (int p = 0; p < 3; p++) gdn_grads_clear(&g[p]);
  tsu_problem_clear(&in, &ct);
}
END_TEST

/* One device is the unsharded path: kern_affine_prefix_vjp equals
 * kern_scan_vjp bit for bit.  With two devices and long memory the
 * gradients differ (the fold's backward really runs) -- the control. */
static void one_device(gdn_dtype dt) {
  gdn_shape s = {1, 64, 1, 2, 8, 8};
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 8);
  gdn_cotangents ct = tsu_cotangents(&s, 1, 9);
  kern_config c1 = vtu_cfg(dt, 16, 1), c2 = vtu_cfg(dt, 16, 2);
  gdn_grads a, b, d2;
  vtu_kern(&in, &ct, &c1, 0, &a);
  vtu_kern(&in, &ct, &c1, 1, &b);
  vtu_kern(&in, &ct, &c2, 1, &d2);
  ck_assert(vtu_same(&a, &b));
  ck_assert(!vtu_same(&a, &d2));
  ck_assert_int_eq(a.dtype, GDN_DTYPE_F32);
  for (size_t i = 0; i < gdn_shape_numel_qk(&s); i++) ck_assert(a.dk[i] == (float)a.dk[i]);
  gdn_grads_clear(&a);
  gdn_grads_clear(&b);
  gdn_grads_clear(&d2);
  tsu_problem_clear(&in, &ct);
}
START_TEST(one_device_is_the_scan) { one_device(GDN_DTYPE_F32); }
END_TEST
/* The same for compute dtype bfloat16 (gradients float32 values). */
START_TEST(one_device_is_the_scan_bf16) { one_device(GDN_DTYPE_BF16); }
END_TEST

/* Elements of gradient `id` that are not bfloat16 values. */
static size_t not_bf16(const gdn_grads *g, gdn_grad_id id) {
  const double *x = gdn_grads_tensor_c(g, id);
  size_t n = 0;
  for (size_t i = 0; i < gdn_grads_numel(&g->shape, id); i++)
    n += (double)gdn_bf16_round((float)x[i]) != x[i];
  return n;
}

/* Compute dtype bfloat16: the cotangents of the bfloat16 inputs are
 * bfloat16 values (kern_vjp.h: dv = rn(dvb beta), dbeta rounded, dk and dq
 * added in bfloat16; with q, k stored normalised there is no float32 norm
 * after them, and Hk = Hv sums no heads), while dg and dh0 are float32 (g
 * and the state are float32) -- the control that the check can fail, as
 * float32 compute's dv, whose elements are not bfloat16 values. */
START_TEST(bf16_cotangents_are_bf16) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 40, 2, 2, 8, 8}, GDN_SYNTH_H0 | GDN_SYNTH_QK_PRENORM, 4);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 5);
  for (int64_t D = 1; D <= 2; D++) {
    kern_config c = vtu_cfg(GDN_DTYPE_BF16, 8, D);
    gdn_grads g;
    vtu_kern(&in, &ct, &c, D > 1, &g);
    const gdn_grad_id bf[] = {GDN_GRAD_DQ, GDN_GRAD_DK, GDN_GRAD_DV, GDN_GRAD_DBETA};
    for (int i = 0; i < 4; i++) ck_assert_msg(not_bf16(&g, bf[i]) == 0, "D=%lld %s", (long long)D, gdn_grads_name(bf[i]));
    ck_assert(not_bf16(&g, GDN_GRAD_DG) > 0 && not_bf16(&g, GDN_GRAD_DH0) > 0);
    gdn_grads_clear(&g);
  }
  kern_config c = vtu_cfg(GDN_DTYPE_F32, 8, 1);
  gdn_grads g;
  vtu_kern(&in, &ct, &c, 0, &g);
  ck_assert(not_bf16(&g, GDN_GRAD_DV) > 0);
  gdn_grads_clear(&g);
  tsu_problem_clear(&in, &ct);
}
END_TEST

static void expect(const gdn_inputs *in, const gdn_cotangents *ct, const kern_config *cfg, int affine,
                   int code, const char *needle) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_grads g;
  gdn_grads_init(&g);
  int rc = affine ? kern_affine_prefix_vjp(in, ct, cfg, &g, &e) : kern_scan_vjp(in, ct, cfg, &g, &e);
  ck_assert_msg(rc == code, "expected %d, got %d (%s)", code, rc, e.msg);
  ck_assert_msg(strstr(e.msg, needle), "message '%s' lacks '%s'", e.msg, needle);
  for (int id = 0; id < GDN_GRADS_N; id++) ck_assert(gdn_grads_tensor(&g, (gdn_grad_id)id) == NULL);
}

/* Each mode the backward does not implement is refused by name, as are bad
 * cotangents and configs; nothing is left allocated. */
START_TEST(refusals) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 32, 1, 1, 4, 4}, 0, 1);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 0, 1);
  kern_config c = vtu_cfg(GDN_DTYPE_F32, 8, 2);
  c.mutant = KERN_MUTANT_COMPOSE_ORDER;
  expect(&in, &ct, &c, 1, GDN_ERR_INPUT, "has no backward");
  c = vtu_cfg(GDN_DTYPE_F32, 8, 2);
  c.prefix = (kern_prefix)7;
  expect(&in, &ct, &c, 1, GDN_ERR_INPUT, "kern_affine_prefix_vjp: ");
  c = vtu_cfg(GDN_DTYPE_F32, 8, 5);
  c.shard = KERN_SHARD_CHUNKS;
  expect(&in, &ct, &c, 1, GDN_ERR_INPUT, "4 chunks");
  c.shard = KERN_SHARD_TOKENS; /* 5 does not divide T = 32 */
  expect(&in, &ct, &c, 1, GDN_ERR_INPUT, "does not divide T = 32");
  c = vtu_cfg(GDN_DTYPE_F32, 8, 2);
  ct.d_o[17] = INFINITY;
  expect(&in, &ct, &c, 1, GDN_ERR_INPUT, "cotangent do: non-finite value inf at flat index 17");
  ct.d_o[17] = 0;
  ct.shape.Dv = 3;
  expect(&in, &ct, &c, 0, GDN_ERR_INPUT, "not the inputs'");
  ct.shape.Dv = 4;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(kern_scan_vjp(&in, &ct, &c, NULL, &e), GDN_ERR_INTERNAL);
  tsu_problem_clear(&in, &ct);
}
END_TEST

/* The backward-only mutant grad-seam-stopped (kern_mutant.h): its forward
 * is the correct program's bit for bit (kern_affine_prefix ignores it); its
 * gradients at D = 4 with h0 and long memory differ from the correct
 * backward's by far more than round-off (>= 1e-2 relative in dk, dv, dg,
 * dbeta and dh0: every device but the last, and h0, lose the later tokens'
 * part; dq, which reads the forward's states only, is unchanged), while the last device's own rows, which no carried state feeds back
 * into, stay what they are; at D = 1 (no seam) the backward is the correct
 * one bit for bit (the control), and the scan's backward ignores it. */
START_TEST(grad_seam_stopped) {
  gdn_shape s = {1, 64, 1, 2, 8, 8};
  gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 12);
  gdn_cotangents ct = tsu_cotangents(&s, 1, 13);
  kern_config c = vtu_cfg(GDN_DTYPE_F32, 8, 4), cm = c;
  cm.mutant = KERN_MUTANT_GRAD_SEAM_STOPPED;
  gdn_outputs fa, fb;
  gdn_outputs_init(&fa);
  gdn_outputs_init(&fb);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(kern_affine_prefix(&in, &c, &fa, &e), GDN_OK);
  ck_assert_int_eq(kern_affine_prefix(&in, &cm, &fb, &e), GDN_OK);
  ck_assert(!memcmp(fa.o, fb.o, gdn_shape_numel_v(&s) * sizeof(double)));
  ck_assert(!memcmp(fa.ht, fb.ht, gdn_shape_numel_state(&s) * sizeof(double)));
  gdn_grads good, bad;
  vtu_kern(&in, &ct, &c, 1, &good);
  vtu_kern(&in, &ct, &cm, 1, &bad);
  for (int id = 0; id < GDN_GRADS_N; id++) {
    const double r = gdn_grads_rel_fro(&bad, &good, (gdn_grad_id)id);
    fprintf(stderr, "grad-seam-stopped D 4: %s rel %.3g\n", gdn_grads_name((gdn_grad_id)id), r);
    if (id == GDN_GRAD_DQ) /* dq reads the forward's states only, never an adjoint state */
      ck_assert_msg(r == 0, "dq: %.3g", r);
    else
      ck_assert_msg(r >= 1e-2, "%s: %.3g", gdn_grads_name((gdn_grad_id)id), r);
  }
  const int64_t last = 3 * s.T / 4 * s.Hv * s.Dv; /* device 3's first dv element */
  ck_assert(!memcmp(good.dv + last, bad.dv + last, (gdn_shape_numel_v(&s) - (size_t)last) * sizeof(double)));
  gdn_grads_clear(&good);
  gdn_grads_clear(&bad);
  c.devices = cm.devices = 1;
  vtu_kern(&in, &ct, &c, 1, &good);
  vtu_kern(&in, &ct, &cm, 1, &bad);
  ck_assert(vtu_same(&good, &bad));
  gdn_grads_clear(&good);
  gdn_grads_clear(&bad);
  vtu_kern(&in, &ct, &c, 0, &good); /* the scan's backward ignores the row */
  vtu_kern(&in, &ct, &cm, 0, &bad);
  ck_assert(vtu_same(&good, &bad));
  gdn_grads_clear(&good);
  gdn_grads_clear(&bad);
  gdn_outputs_clear(&fa);
  gdn_outputs_clear(&fb);
  tsu_problem_clear(&in, &ct);
}
END_TEST

/* Every allocation failing in turn: GDN_ERR_NOMEM naming the kernel, the
 * gradients cleared; the run that succeeds equals an undisturbed one. */
START_TEST(alloc_failures) {
  gdn_inputs in = tsu_inputs((gdn_shape){1, 40, 1, 2, 4, 4}, GDN_SYNTH_H0, 2);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 1, 2);
  for (int mode = 0; mode < 3; mode++) { /* scan; affine, chunks on 3; tokens on 4 */
    const int affine = mode > 0;
    kern_config c = vtu_cfg(GDN_DTYPE_F32, 8, mode == 0 ? 1 : mode == 1 ? 3 : 4);
    c.shard = mode == 2 ? KERN_SHARD_TOKENS : KERN_SHARD_CHUNKS;
    gdn_grads ref;
    vtu_kern(&in, &ct, &c, affine, &ref);
    long sites = 0;
    for (long n = 1;; n++) {
      ck_assert(n < 100);
      gdn_error e;
      gdn_error_init(&e);
      gdn_grads g;
      gdn_grads_init(&g);
      gdn_alloc_fail_after(n);
      int rc = affine ? kern_affine_prefix_vjp(&in, &ct, &c, &g, &e) : kern_scan_vjp(&in, &ct, &c, &g, &e);
      gdn_alloc_fail_after(0);
      if (rc == GDN_OK) {
        ck_assert(vtu_same(&g, &ref));
        gdn_grads_clear(&g);
        break;
      }
      sites++;
      ck_assert_msg(rc == GDN_ERR_NOMEM && strstr(e.msg, "_vjp: ") && strstr(e.msg, "out of memory"),
                    "allocation %ld: %d '%s'", n, rc, e.msg);
      for (int id = 0; id < GDN_GRADS_N; id++) ck_assert(gdn_grads_tensor(&g, (gdn_grad_id)id) == NULL);
    }
    /* six gradients, the scratch; with devices the prefix's schedule
     * (a work buffer, its trace, the operations) */
    ck_assert_int_eq(sites, affine ? 10 : 7);
    gdn_grads_clear(&ref);
  }
  tsu_problem_clear(&in, &ct);
}
END_TEST

/* The backward takes the forward's layout (kern_affine_piece, cfg->shard).
 * Where C divides T/D the two modes are the same chunk grid (array_split
 * gives every device T/(DC) chunks): their gradients are bit-identical.
 * Where it does not, token sharding chunks each device from its first token
 * and pads at every seam, so the chunk boundaries move: the gradients differ
 * in the last bits (the control; each is held to the oracle in
 * test_vjp_vs_oracle).  Token sharding needs D | T: refused by name
 * otherwise, as the forward refuses it. */
START_TEST(shards_follow_the_forward) {
  const struct { int64_t T, C, D; int same; } cases[] = {
      {64, 8, 4, 1}, {96, 16, 2, 1}, {60, 8, 3, 0}, {72, 16, 4, 0}, {40, 4, 8, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    gdn_shape s = {1, cases[k].T, 1, 2, 8, 8};
    gdn_inputs in = tsu_inputs(s, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 11);
    gdn_cotangents ct = tsu_cotangents(&s, 1, 12);
    kern_config ct_ = vtu_cfg(GDN_DTYPE_F32, cases[k].C, cases[k].D), cc = ct_;
    ct_.shard = KERN_SHARD_TOKENS;
    cc.shard = KERN_SHARD_CHUNKS;
    gdn_grads gt, gc;
    vtu_kern(&in, &ct, &ct_, 1, &gt);
    vtu_kern(&in, &ct, &cc, 1, &gc);
    ck_assert_msg(vtu_same(&gt, &gc) == cases[k].same, "case %zu: tokens vs chunks same=%d", k,
                  vtu_same(&gt, &gc));
    gdn_grads_clear(&gt);
    gdn_grads_clear(&gc);
    gdn_cotangents_clear(&ct);
    gdn_inputs_clear(&in);
  }
  gdn_inputs in = tsu_inputs((gdn_shape){1, 30, 1, 1, 4, 4}, 0, 1);
  gdn_cotangents ct = tsu_cotangents(&in.shape, 0, 1);
  kern_config c = vtu_cfg(GDN_DTYPE_F32, 8, 4);
  c.shard = KERN_SHARD_TOKENS;
  expect(&in, &ct, &c, 1, GDN_ERR_INPUT, "kern_affine_prefix_vjp: ");
  tsu_problem_clear(&in, &ct);
}
END_TEST

CKR_MAIN("vjp_kernels", "vjp_kernels", 120, threads_change_nothing, one_device_is_the_scan,
    one_device_is_the_scan_bf16, bf16_cotangents_are_bf16, refusals, grad_seam_stopped, alloc_failures, shards_follow_the_forward,
    schedules_differ)
