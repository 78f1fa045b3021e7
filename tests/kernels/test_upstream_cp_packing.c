/* What MaxText's context-parallel path does at document boundaries
 * (packed documents, as upstream runs them), reproduced by our affine-prefix
 * kernel in packing `leak`.
 *
 * Facts (the newest stored upstream, MaxText PR #4968 head of 2026-08-22,
 * src/maxtext/models/gdn_cp.py and models/qwen3.py; no other ref of the
 * snapshot has a compose_local): compose_local(w, u, k, g) folds a device's
 * chunks into one affine map and takes no segment ids; incoming_state
 * composes the devices' maps with no mask; the layer, before the kernel,
 * sets k = v = 0 and g = 0 where the segment id is 0 and does nothing at a
 * document boundary.  So a segment-blind fold over inputs zeroed at the
 * padding: inside a shard and across a seam the state flows from one
 * document into the next.
 *
 *   - our affine-prefix, token-sharded (D = 4, C = 8, two chunks per
 *     shard, B = 1, H = 2, Dk = Dv = 16, the shape of upstream's own CP
 *     test), with segment ids under leak equals, bit for bit, the same
 *     kernel without segment ids on inputs zeroed where the id is 0 (the
 *     segment-blind fold), for both prefix schedules upstream has;
 *   - negative control: under reset the documents after a boundary (one on
 *     a seam, one inside a shard) differ from it by O(1e-2) or more. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "kern_test_util.h"
#include "../check_runner.h"

static const gdn_shape S = {1, 64, 2, 2, 16, 16};

/* ids: document 1 on [0, 21), 2 on [21, 32) (a boundary inside shard 0),
 * 3 on [32, 58) (a boundary on the seam 32), padding on [58, 64). */
static int32_t id_of(int64_t t) { return t < 21 ? 1 : t < 32 ? 2 : t < 58 ? 3 : 0; }

static void blind(gdn_inputs *z, const gdn_inputs *in) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(z);
  ck_assert_int_eq(gdn_inputs_copy(z, in, &e), GDN_OK);
  gdn_free(z->seg);
  z->seg = NULL;
  for (int64_t t = 0; t < S.T; t++) {
    if (id_of(t)) continue;
    memset(z->k + t * S.Hk * S.Dk, 0, (size_t)(S.Hk * S.Dk) * sizeof(float));
    memset(z->v + t * S.Hv * S.Dv, 0, (size_t)(S.Hv * S.Dv) * sizeof(float));
    for (int64_t h = 0; h < S.Hv; h++) z->g[t * S.Hv + h] = 0;
  }
}

/* o of rows [t0, t1) of x against y, relative (Frobenius). */
static double rel_rows(const gdn_outputs *x, const gdn_outputs *y, int64_t t0, int64_t t1) {
  double num = 0, den = 0;
  for (int64_t t = t0; t < t1; t++)
    for (int64_t h = 0; h < S.Hv; h++) {
      const double *a = gdn_outputs_o((gdn_outputs *)x, 0, t, h), *b = gdn_outputs_o((gdn_outputs *)y, 0, t, h);
      for (int64_t d = 0; d < S.Dv; d++) num += (a[d] - b[d]) * (a[d] - b[d]), den += b[d] * b[d];
    }
  return sqrt(num / den);
}

START_TEST(leak_is_the_segment_blind_fold) {
  gdn_inputs in, z;
  kt_make(&in, S, 11, 1, 1, 0.002f); /* long memory: the state crosses every boundary */
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_inputs_alloc_seg(&in, &e), GDN_OK);
  for (int64_t t = 0; t < S.T; t++) in.seg[t] = id_of(t);
  in.packing = GDN_PACKING_LEAK;
  blind(&z, &in);
  const kern_prefix pf[2] = {KERN_PREFIX_ASSOCIATIVE_SCAN, KERN_PREFIX_HILLIS_STEELE};
  for (int p = 0; p < 2; p++) {
    kern_config c = kt_cfg(GDN_DTYPE_F32, 8, 4);
    c.shard = KERN_SHARD_TOKENS;
    c.prefix = pf[p];
    gdn_outputs a, b, r;
    gdn_outputs_init(&a), gdn_outputs_init(&b), gdn_outputs_init(&r);
    kt_run_ok(K_AFFINE, &in, &c, &a);
    kt_run_ok(K_AFFINE, &z, &c, &b);
    ck_assert_msg(kt_same_outputs(&a, &b), "prefix %d", p);
    /* negative control: reset restarts documents 2 and 3 */
    in.packing = GDN_PACKING_RESET;
    kt_run_ok(K_AFFINE, &in, &c, &r);
    in.packing = GDN_PACKING_LEAK;
    const double d2 = rel_rows(&r, &b, 21, 32), d3 = rel_rows(&r, &b, 32, 58), d1 = rel_rows(&r, &b, 0, 21);
    printf("prefix %s: reset vs the segment-blind fold: document 2 %.3g, document 3 %.3g\n",
           kern_prefix_name(pf[p]), d2, d3);
    ck_assert_msg(d2 > 1e-2 && d3 > 1e-2, "reset vs blind: document 2 %g, document 3 %g", d2, d3);
    ck_assert_msg(d1 == 0, "document 1 has no boundary before it: %g", d1);
    gdn_outputs_clear(&a), gdn_outputs_clear(&b), gdn_outputs_clear(&r);
  }
  gdn_inputs_clear(&z);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("upstream_cp_packing", "all", 0, leak_is_the_segment_blind_fold)
