/* parity_packing_group: the packing verdict and the padding convention of
 * external outputs judged a head group at a time are the whole run's.
 * Packed documents under reset with a padding tail (GQA, Hk 2, Hv 4), two
 * outputs: the oracle's o under leak (matches leak: a mismatch) and under
 * reset with a relative error of 1e-7 (matches reset).  Over the two
 * groups of one key head, the merged attrs (packing_err bit for bit,
 * packing_matched, the mismatch note) equal parity_packing_match's; each
 * group's o masked at padding (parity_padding_apply on the group) is the
 * whole mask's slab, with the same attrs.  Negative control: an error
 * planted in the second group's heads changes the whole verdict, and the
 * merge that skips that group misses it (the comparison can fail). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check_runner.h"

#include "gdn_alloc.h"
#include "gdn_synth.h"
#include "parity_packing.h"
#include "parity_packing_group.h"
#include "parity_padding.h"

#define TIER PARITY_ORACLE_DD
#define BITS 128

static const gdn_shape S = {1, 128, 2, 4, 16, 16}; /* B T Hk Hv Dk Dv */
static const gdn_synth_opts SYN = {3, GDN_SYNTH_SLOW_GATES, 0};

static void inputs(gdn_inputs *in, int64_t k0, int64_t k1) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  ck_assert_int_eq(k1 - k0 == S.Hk ? gdn_synth_generate(in, &S, &SYN, &e)
                                   : gdn_synth_generate_heads(in, &S, k0, k1, &SYN, &e), GDN_OK);
  ck_assert_int_eq(gdn_synth_segments(in, SYN.seed, 3, &e), GDN_OK);
  in->packing = GDN_PACKING_RESET;
}

static void reference(parity_reference *r, const gdn_inputs *in, int packing) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs v = *in;
  v.packing = packing;
  parity_reference_init(r);
  ck_assert_msg(parity_reference_compute(r, &v, TIER, BITS, &e) == GDN_OK, "%s", e.msg);
}

/* Value heads [h0, h1) of a whole o, copied into a group's layout. */
static void slab(const double *o, int64_t h0, int64_t h1, double *out) {
  const size_t w = (size_t)((h1 - h0) * S.Dv);
  for (int64_t bt = 0; bt < S.B * S.T; bt++) memcpy(out + (size_t)bt * w, o + ((size_t)bt * S.Hv + h0) * S.Dv, w * sizeof *o);
}

static void externals(parity_external *x, const gdn_outputs *out) {
  static const char *const names[2] = {"leaks", "resets"};
  for (int i = 0; i < 2; i++) {
    memset(&x[i], 0, sizeof x[i]);
    x[i].name = names[i];
    x[i].out = &out[i];
    x[i].attrs = json_object();
    x[i].packing_matched = -1;
  }
}

static void externals_clear(parity_external *x) {
  for (int i = 0; i < 2; i++) {
    json_decref(x[i].attrs);
    if (x[i].owned_out) gdn_outputs_clear(x[i].owned_out), gdn_free(x[i].owned_out);
  }
}

/* The merged verdict over the groups in `use` (bit g: group g taken). */
static void merged(const gdn_inputs *whole, const gdn_outputs *out, unsigned use, parity_external *gx) {
  gdn_error e;
  gdn_error_init(&e);
  parity_packing_acc acc[2];
  parity_packing_acc_init(&acc[0]), parity_packing_acc_init(&acc[1]);
  const int64_t r = S.Hv / S.Hk;
  for (int64_t g = 0; g < S.Hk; g++) {
    if (!(use >> g & 1)) continue;
    gdn_inputs gin;
    inputs(&gin, g, g + 1);
    parity_reference gref;
    reference(&gref, &gin, GDN_PACKING_RESET);
    double *o[2];
    for (int i = 0; i < 2; i++) {
      o[i] = malloc((size_t)(S.B * S.T * r * S.Dv) * sizeof(double));
      slab(out[i].o, g * r, (g + 1) * r, o[i]);
    }
    ck_assert_msg(parity_packing_group_add(&gin, &gref, TIER, BITS, (const double *const *)o, 2, acc, &e) == GDN_OK,
                  "%s", e.msg);
    free(o[0]), free(o[1]);
    parity_reference_clear(&gref);
    gdn_inputs_clear(&gin);
  }
  ck_assert_int_eq(parity_packing_group_record(whole, acc, gx, 2, &e), GDN_OK);
}

static void same_verdict(const parity_external *a, const parity_external *b, int want) {
  for (int i = 0; i < 2; i++) {
    char *ja = json_dumps(a[i].attrs, JSON_SORT_KEYS), *jb = json_dumps(b[i].attrs, JSON_SORT_KEYS);
    const int eq = json_equal(a[i].attrs, b[i].attrs) && a[i].packing_matched == b[i].packing_matched &&
                   a[i].packing_mismatch == b[i].packing_mismatch && !strcmp(a[i].packing_note, b[i].packing_note);
    if (want) ck_assert_msg(eq, "output %d: whole %s, by groups %s", i, ja, jb);
    free(ja), free(jb);
    if (!want && !eq) return;
  }
  ck_assert_msg(want, "the verdicts agree though a group was skipped");
}

START_TEST(verdict_merged_over_groups) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs in;
  inputs(&in, 0, S.Hk);
  ck_assert(parity_packing_boundaries(&in) > 0 && parity_padding_tokens(&in) > 0);
  parity_reference ref, leak;
  reference(&ref, &in, GDN_PACKING_RESET);
  reference(&leak, &in, GDN_PACKING_LEAK);
  gdn_outputs out[2];
  const size_t n = (size_t)(S.B * S.T * S.Hv * S.Dv);
  for (int i = 0; i < 2; i++) {
    gdn_outputs_init(&out[i]);
    ck_assert_int_eq(gdn_outputs_alloc(&out[i], &S, GDN_DTYPE_F32, &e), GDN_OK);
  }
  for (size_t j = 0; j < n; j++) out[0].o[j] = leak.out.o[j], out[1].o[j] = ref.out.o[j] * (1 + 1e-7);
  parity_external wx[2], gx[2];
  externals(wx, out), externals(gx, out);
  ck_assert_int_eq(parity_packing_match(&in, &ref, TIER, BITS, wx, 2, &e), GDN_OK);
  ck_assert_int_eq(wx[0].packing_matched, GDN_PACKING_LEAK);
  ck_assert(wx[0].packing_mismatch);
  ck_assert_int_eq(wx[1].packing_matched, GDN_PACKING_RESET);
  merged(&in, out, 3u, gx);
  same_verdict(wx, gx, 1);
  /* the padding convention per group: each group's mask is the whole mask's slab */
  ck_assert_int_eq(parity_padding_apply(&in, &ref, wx, 2, &e), GDN_OK);
  const int64_t r = S.Hv / S.Hk;
  for (int64_t g = 0; g < S.Hk; g++) {
    gdn_inputs gin;
    inputs(&gin, g, g + 1);
    parity_reference gref;
    reference(&gref, &gin, GDN_PACKING_RESET);
    gdn_outputs go[2];
    parity_external px[2];
    double *want = malloc(gdn_shape_numel_v(&gin.shape) * sizeof(double));
    for (int i = 0; i < 2; i++) {
      gdn_outputs_init(&go[i]);
      ck_assert_int_eq(gdn_outputs_alloc(&go[i], &gin.shape, GDN_DTYPE_F32, &e), GDN_OK);
      slab(out[i].o, g * r, (g + 1) * r, go[i].o);
    }
    externals(px, go);
    ck_assert_int_eq(parity_padding_apply(&gin, &gref, px, 2, &e), GDN_OK);
    for (int i = 0; i < 2; i++) {
      slab(wx[i].out->o, g * r, (g + 1) * r, want);
      ck_assert(!memcmp(want, px[i].out->o, gdn_shape_numel_v(&gin.shape) * sizeof(double)));
      ck_assert(json_equal(json_object_get(px[i].attrs, "padding_judged"), json_object_get(wx[i].attrs, "padding_judged")));
      gdn_outputs_clear(&go[i]);
    }
    free(want);
    externals_clear(px);
    parity_reference_clear(&gref);
    gdn_inputs_clear(&gin);
  }
  externals_clear(wx), externals_clear(gx);
  /* negative control: an error planted in group 1's heads; skipping that group misses it */
  out[1].o[((size_t)(S.T / 2) * S.Hv + 3) * S.Dv + 5] += 0.5;
  externals(wx, out), externals(gx, out);
  ck_assert_int_eq(parity_packing_match(&in, &ref, TIER, BITS, wx, 2, &e), GDN_OK);
  merged(&in, out, 1u, gx);
  same_verdict(wx, gx, 0);
  externals_clear(gx);
  externals(gx, out);
  merged(&in, out, 3u, gx);
  same_verdict(wx, gx, 1);
  externals_clear(wx), externals_clear(gx);
  for (int i = 0; i < 2; i++) gdn_outputs_clear(&out[i]);
  parity_reference_clear(&ref), parity_reference_clear(&leak);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("packing_group", "packing_group", 300, verdict_merged_over_groups)
