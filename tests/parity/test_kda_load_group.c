/* fix_kda_load_group: a KDA fixture's key-head group read by hyperslab --
 * the inputs and the rank-4 gate, the outputs' o and ht, /oracle's o and ht
 * -- equals the same group cut from the whole load (fix_kda_group_slice for
 * the inputs, the same value heads of each output set) bit for bit, for
 * groups at the start, the middle and the whole (B 2, Hk 3, Hv 6: GVA,
 * h0, q and v stored as bfloat16, a dd /oracle with its attributes); the
 * whole file's hashes taken as read by blocks (fix_kda_hashes) are the
 * whole load's, the cotangents' (fix_kda_grad_problem_sha256) too; the
 * cotangents and each output's gradients by group are the whole's cut
 * (dq, dk by key head, the rest by value head).  Negative controls: a group read at other heads differs
 * from the cut; one input value changed changes the hashes (and they are
 * the changed file's whole load's); a group outside [0, Hk) and one over
 * --max-bytes are refused by name.  The reader a streamed KDA check would
 * take (docs/errors.md says what else it needs). */
#include <check.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fixtures/h5_edit.h"
#include "fix_kda.h"
#include "fix_kda_group.h"
#include "fix_regen.h"
#include "fix_string.h"
#include "fix_synth_grads.h"
#include "fix_write.h"
#include "gdn_chgate.h"
#include "gdn_synth.h"

static char dir[64], path[128];

static const gdn_shape shape = {2, 64, 3, 6, 16, 8}; /* B T Hk Hv Dk Dv */

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/test_kda_load_group.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/k.h5", dir);
  gdn_error e;
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_synth_opts so = {11, GDN_SYNTH_H0, GDN_T_Q | GDN_T_V}; /* q, v stored as bfloat16 */
  ck_assert_int_eq(gdn_synth_generate(&fx.inputs, &shape, &so, &e), 0);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&fx.chgate, &shape, 11, &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.recurrence, "kda", &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.source, "synthetic", &e), 0);
  fx.chunk_size = 32;
  ck_assert_msg(fix_synth_cotangents(&fx, 11, &e) == 0, "%s", e.msg); /* the outputs get gradients */
  ck_assert_msg(fix_synth_kernel_output(&fx, 1, &e) == 0, "%s", e.msg);
  ck_assert_msg(fix_synth_kernel_output(&fx, 2, &e) == 0, "%s", e.msg);
  ck_assert_msg(fix_write(&fx, path, &e) == 0, "%s", e.msg);
  fix_fixture_clear(&fx);
  fix_regen_opts o;
  fix_regen_opts_init(&o);
  o.dd = 1;
  ck_assert_msg(fix_regen(path, &o, NULL, &e) == 0, "%s", e.msg);
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* 1 when x (outer, hg, inner) equals w (outer, [h0, h0 + hg) of H, inner),
 * elements of es bytes. */
static int same_rows(const void *x, const void *w, int64_t outer, int64_t H, int64_t h0, int64_t hg, int64_t inner,
                     size_t es) {
  const size_t run = (size_t)(hg * inner) * es;
  for (int64_t o = 0; o < outer; o++)
    if (memcmp((const char *)x + (size_t)o * run, (const char *)w + (size_t)((o * H + h0) * inner) * es, run))
      return 0;
  return 1;
}

static int same_heads(const double *x, const double *w, int64_t outer, int64_t H, int64_t h0, int64_t hg,
                      int64_t inner) {
  return same_rows(x, w, outer, H, h0, hg, inner, sizeof *x);
}

static int same_outputs(const gdn_outputs *x, const gdn_outputs *w, int64_t v0, int64_t hv) {
  const gdn_shape *s = &w->shape;
  return same_heads(x->o, w->o, s->B * s->T, s->Hv, v0, hv, s->Dv) &&
         (!w->ht || same_heads(x->ht, w->ht, s->B, s->Hv, v0, hv, s->Dk * s->Dv));
}

static int same_f32(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * sizeof *a); }

/* A group's gradients (key heads [k0, k0 + nk)) against the whole set's:
 * dq, dk by key head, dv, dg (per channel), dbeta, dh0 by value head. */
static int same_grads(const gdn_grads *x, const gdn_grads *w, int64_t k0, int64_t nk) {
  const gdn_shape *s = &w->shape;
  const int64_t r = s->Hv / s->Hk, BT = s->B * s->T;
  return same_heads(x->dq, w->dq, BT, s->Hk, k0, nk, s->Dk) && same_heads(x->dk, w->dk, BT, s->Hk, k0, nk, s->Dk) &&
         same_heads(x->dv, w->dv, BT, s->Hv, k0 * r, nk * r, s->Dv) &&
         same_heads(x->dg, w->dg, BT, s->Hv, k0 * r, nk * r, s->Dk) &&
         same_heads(x->dbeta, w->dbeta, BT, s->Hv, k0 * r, nk * r, 1) &&
         same_heads(x->dh0, w->dh0, s->B, s->Hv, k0 * r, nk * r, s->Dk * s->Dv);
}

/* Group [k0, k1) read against the whole load's cut of [c0, c0 + k1 - k0). */
static int group_matches(const fix_fixture *w, int64_t k0, int64_t k1, int64_t c0) {
  gdn_error e;
  fix_fixture g;
  fix_fixture_init(&g);
  ck_assert_msg(fix_kda_load_group(&g, path, k0, k1, 0, &e) == 0, "%s", e.msg);
  gdn_inputs in;
  gdn_chgate gate;
  gdn_inputs_init(&in);
  gdn_chgate_init(&gate);
  ck_assert_msg(fix_kda_group_slice(w, c0, c0 + k1 - k0, &in, &gate, &e) == 0, "%s", e.msg);
  const gdn_shape *s = &g.inputs.shape;
  ck_assert(s->Hk == k1 - k0 && s->Hv == 2 * (k1 - k0) && s->T == 64 && s->Dk == 16 && s->Dv == 8);
  ck_assert(g.inputs.h0 && g.chgate.g && g.n_outputs == 2 && g.oracle.present);
  ck_assert_str_eq(g.recurrence, "kda");
  /* the attributes and the dd tier as the whole load has them; freshness is the whole file's */
  ck_assert(g.oracle.tier_dd && g.oracle.precision_bits == 106 && !g.oracle.fresh);
  ck_assert_int_eq(g.oracle.certified_bits, w->oracle.certified_bits);
  ck_assert_int_eq(g.oracle.sampled_columns, w->oracle.sampled_columns);
  ck_assert_int_eq(g.chunk_size, 32);
  int same = same_f32(g.inputs.q, in.q, gdn_shape_numel_qk(s)) && same_f32(g.inputs.k, in.k, gdn_shape_numel_qk(s)) &&
             same_f32(g.inputs.v, in.v, gdn_shape_numel_v(s)) &&
             same_f32(g.inputs.beta, in.beta, gdn_shape_numel_gate(s)) &&
             same_f32(g.inputs.h0, in.h0, gdn_shape_numel_state(s)) &&
             same_f32(g.chgate.g, gate.g, gdn_chgate_numel(s));
  const int64_t v0 = 2 * c0, hv = 2 * (k1 - k0);
  for (size_t i = 0; i < 2; i++) {
    ck_assert_str_eq(g.outputs[i].name, w->outputs[i].name);
    ck_assert_int_eq(g.outputs[i].devices, w->outputs[i].devices);
    same = same && same_outputs(&g.outputs[i].out, &w->outputs[i].out, v0, hv);
    ck_assert(g.outputs[i].has_grads && g.outputs[i].grads_present == w->outputs[i].grads_present);
    same = same && same_grads(&g.outputs[i].grads, &w->outputs[i].grads, c0, k1 - k0);
  }
  /* the cotangents by value head; the group's grad_problem_sha256 is left to the file's (by blocks) */
  ck_assert(g.has_cotangents && g.cot.dht && !g.grad_problem_sha256[0]);
  same = same && same_rows(g.cot.d_o, w->cot.d_o, s->B * s->T, 6, v0, hv, s->Dv, sizeof(float)) &&
         same_rows(g.cot.dht, w->cot.dht, s->B, 6, v0, hv, s->Dk * s->Dv, sizeof(float));
  same = same && same_outputs(&g.oracle.out, &w->oracle.out, v0, hv);
  gdn_chgate_clear(&gate);
  gdn_inputs_clear(&in);
  fix_fixture_clear(&g);
  return same;
}

START_TEST(groups_by_hyperslab_are_the_whole_loads_cut) {
  gdn_error e;
  fix_fixture w;
  fix_fixture_init(&w);
  ck_assert_msg(fix_kda_load(&w, path, 0, &e) == 0, "%s", e.msg);
  ck_assert(w.oracle.fresh && w.oracle.tier_dd);
  ck_assert(group_matches(&w, 0, 1, 0));
  ck_assert(group_matches(&w, 1, 3, 1));
  ck_assert(group_matches(&w, 2, 3, 2));
  ck_assert(group_matches(&w, 0, 3, 0));
  /* negative control: heads [1, 3) are not heads [0, 2) */
  ck_assert(!group_matches(&w, 1, 3, 0));
  fix_fixture_clear(&w);
}
END_TEST

START_TEST(hashes_as_read_are_the_whole_loads) {
  gdn_error e;
  char ih[FIX_SHA256_HEX], ph[FIX_SHA256_HEX];
  for (int round = 0; round < 2; round++) {
    fix_fixture w;
    fix_fixture_init(&w);
    ck_assert_msg(fix_kda_load(&w, path, 0, &e) == 0, "%s", e.msg);
    for (int blk = 0; blk < 2; blk++) { /* one block a row, then 70 floats: 1 to 11 tokens, partial last blocks */
      fix_kda_hashes_test_block(blk ? 70 : 0);
      ck_assert_msg(fix_kda_hashes(path, ih, ph, &e) == 0, "%s", e.msg);
      ck_assert_str_eq(ih, w.inputs_sha256);
      ck_assert_str_eq(ph, w.problem_sha256);
      char gh[FIX_SHA256_HEX]; /* the cotangents' too: one token or head a block, then whole rows */
      ck_assert_msg(fix_kda_grad_problem_sha256(path, &shape, ph, blk ? 1 : (int64_t)1 << 20, gh, &e) == 0, "%s",
                    e.msg);
      ck_assert_str_eq(gh, w.grad_problem_sha256);
    }
    fix_kda_hashes_test_block(0);
    ck_assert_int_eq(!strcmp(ih, w.oracle.inputs_sha256), !round); /* fresh, then stale */
    fix_fixture_clear(&w);
    if (!round) h5e_poke(path, "/inputs/g", 3 * 6 * 16 + 5, -0.5f); /* one gate value changed */
  }
}
END_TEST

START_TEST(bad_groups_refused_by_name) {
  gdn_error e;
  fix_fixture g;
  fix_fixture_init(&g);
  ck_assert_int_eq(fix_kda_load_group(&g, path, 2, 4, 0, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "key heads [2, 4) outside the file's [0, 3)"), "%s", e.msg);
  ck_assert_int_eq(fix_kda_load_group(&g, path, 1, 1, 0, &e), GDN_ERR_INPUT);
  ck_assert_int_eq(fix_kda_load_group(&g, path, 0, 1, 4096, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "over --max-bytes 4096"), "%s", e.msg);
  ck_assert_ptr_null(g.inputs.q);
}
END_TEST

int main(void) {
  Suite *s = suite_create("kda_load_group");
  TCase *tc = tcase_create("kda_load_group");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, groups_by_hyperslab_are_the_whole_loads_cut);
  tcase_add_test(tc, hashes_as_read_are_the_whole_loads);
  tcase_add_test(tc, bad_groups_refused_by_name);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  const int nf = srunner_ntests_failed(r);
  srunner_free(r);
  return nf ? 1 : 0;
}
