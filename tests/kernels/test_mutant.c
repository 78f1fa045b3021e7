/* The mutant catalogue (kern_mutant.h) in kern_affine_prefix.
 *
 * 1. Every mutant shows where it should: at a shape that has everything the
 *    catalogue needs (D = 4 Hillis-Steele, h0, GQA Hk = 2 < Hv = 4, packed
 *    documents with packing = reset and document pads, T/D = 60 tokens per
 *    device with C = 16 so every device pads 4 positions, long memory
 *    g * 0.002), each mutant's o or ht differs from the correct run by
 *    >= 1e-4 relative: >= 30x the float32 kernels' round-off bound
 *    (test_f32_vs_f64: 2.9e-6).  The exception, asserted as such:
 *    final-from-replay equals the correct program in exact arithmetic, so o
 *    is bit-identical and ht differs by round-off only (0 < rel < 1e-5).
 *    The rows that need bfloat16 compute (bf16-cast-missing) are judged in
 *    bf16_mutants instead, with the bfloat16 casts bf16-cast-added and
 *    bf16-seam also run in bfloat16 compute there; hs-two-rounds (needs more
 *    than 4 devices and no reset before the seams) in
 *    new_families_show_where_they_must, with the other rows whose control
 *    is a shape where they must stay exact; the backward-only row
 *    (grad-seam-stopped) in tests/grads/test_vjp_kernels.
 * 2. The `needs` column is honest: at a bare shape (D = 1, no h0, Hk = Hv,
 *    no documents, C | T) every mutant that needs something is
 *    bit-identical to the correct run, and the two that need nothing
 *    (scale-twice, scale-none) are not (negative control of 1).
 * 3. A mutant never touches the stock scan: kern_scan with any mutant set
 *    is bit-identical to kern_scan without.
 * 4. kern_mutant_parse round-trips every name and rejects an unknown one
 *    with the list of names. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "kern_test_util.h"
#include "../check_runner.h"

#define SHOWS 1e-4

static void make_full(gdn_inputs *in) {
  const gdn_shape s = {1, 240, 2, 4, 16, 16};
  kt_make(in, s, 22, 1, 1, 0.002f);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_inputs_alloc_seg(in, &e), GDN_OK);
  /* documents 1 | 2 | 3, boundaries at 70 and 150 (inside chunks of 16 and
   * inside device pieces of 60), then 9 pads */
  for (int64_t t = 0; t < s.T; t++) in->seg[t] = t >= s.T - 9 ? 0 : t < 70 ? 1 : t < 150 ? 2 : 3;
  in->packing = GDN_PACKING_RESET;
}

START_TEST(every_mutant_shows) {
  gdn_inputs in;
  make_full(&in);
  gdn_outputs good = kt_outputs(), bad = kt_outputs();
  kern_config c = kt_cfg(GDN_DTYPE_F32, 16, 4);
  c.prefix = KERN_PREFIX_HILLIS_STEELE;
  kt_run_ok(K_AFFINE, &in, &c, &good);
  for (int m = 1; m < KERN_MUTANT_COUNT; m++) {
    const unsigned needs = kern_mutant_row_of((kern_mutant)m)->needs;
    if (needs & KERN_MUTANT_NEEDS_BF16) continue; /* bf16_mutants */
    if (needs & KERN_MUTANT_NEEDS_GRAD) continue; /* backward only: tests/grads/test_vjp_kernels */
    /* documents reset the state, so a prefix that misses the devices
     * before the last reset is exact: new_families_show_where_they_must */
    if (needs & KERN_MUTANT_NEEDS_D5) continue;
    c.mutant = (kern_mutant)m;
    kt_run_ok(K_AFFINE, &in, &c, &bad);
    const double ro = kt_rel_o(&bad, &good), rh = kt_rel_ht(&bad, &good);
    fprintf(stderr, "mutant %-18s o %.3g ht %.3g\n", kern_mutant_name(c.mutant), ro, rh);
    if (m == KERN_MUTANT_FINAL_FROM_REPLAY)
      ck_assert_msg(ro == 0 && rh > 0 && rh < 1e-5, "final-from-replay: o %.3g ht %.3g", ro, rh);
    else
      ck_assert_msg(ro >= SHOWS || rh >= SHOWS, "%s: only o %.3g ht %.3g", kern_mutant_name(c.mutant),
                    ro, rh);
  }
  gdn_outputs_clear(&good);
  gdn_outputs_clear(&bad);
  gdn_inputs_clear(&in);
}
END_TEST

/* Each of the rows added for bug families that hide at some shapes shows
 * exactly where it must (one document: a reset would hide a prefix that
 * misses the devices before it): hs-two-rounds is bit-identical to the correct
 * Hillis-Steele program at D = 2, 3, 4 and differs at D = 5 (ht >= SHOWS:
 * only the last pair misses a round) and 8 (o and ht) -- the control; final-device-0 leaves o bit-identical and
 * moves ht only; h0-first-only is bit-identical without h0 and moves o and
 * ht with it; carry-late moves o and ht at D = 2 already (device 1's
 * carry), under both shardings, where shard-off-by-one leaves D = 2's o
 * bit-identical (its fold of device 1 only feeds ht). */
START_TEST(new_families_show_where_they_must) {
  gdn_inputs in; /* make_full's shape, h0 and gates, one document */
  kt_make(&in, (gdn_shape){1, 240, 2, 4, 16, 16}, 22, 1, 1, 0.002f);
  gdn_outputs good = kt_outputs(), bad = kt_outputs();
  kern_config c = kt_cfg(GDN_DTYPE_F32, 16, 4);
  c.prefix = KERN_PREFIX_HILLIS_STEELE;
  const int64_t Ds[] = {2, 3, 4, 5, 8};
  for (size_t i = 0; i < sizeof Ds / sizeof *Ds; i++) {
    c.devices = Ds[i];
    c.mutant = KERN_MUTANT_NONE;
    kt_run_ok(K_AFFINE, &in, &c, &good);
    c.mutant = KERN_MUTANT_HS_TWO_ROUNDS;
    kt_run_ok(K_AFFINE, &in, &c, &bad);
    const double ro = kt_rel_o(&bad, &good), rh = kt_rel_ht(&bad, &good);
    fprintf(stderr, "hs-two-rounds D %d: o %.3g ht %.3g\n", (int)c.devices, ro, rh);
    if (c.devices <= 4)
      ck_assert_msg(kt_same_outputs(&bad, &good), "hs-two-rounds changed D = %d", (int)c.devices);
    else /* at D = 5 only x[4], ht's pair, misses a round; at 8 devices 5 .. 7 replay from wrong carries */
      ck_assert_msg((ro >= SHOWS || c.devices == 5) && rh >= SHOWS, "hs-two-rounds D = %d: o %.3g ht %.3g",
                    (int)c.devices, ro, rh);
  }
  c.devices = 4;
  c.mutant = KERN_MUTANT_NONE;
  kt_run_ok(K_AFFINE, &in, &c, &good);
  c.mutant = KERN_MUTANT_FINAL_DEVICE_0;
  kt_run_ok(K_AFFINE, &in, &c, &bad);
  ck_assert(kt_rel_o(&bad, &good) == 0 && kt_rel_ht(&bad, &good) >= SHOWS);
  const kern_shard shards[] = {KERN_SHARD_TOKENS, KERN_SHARD_CHUNKS};
  for (size_t i = 0; i < 2; i++) {
    c.devices = 2, c.shard = shards[i];
    c.mutant = KERN_MUTANT_NONE;
    kt_run_ok(K_AFFINE, &in, &c, &good);
    c.mutant = KERN_MUTANT_CARRY_LATE;
    kt_run_ok(K_AFFINE, &in, &c, &bad);
    const double ro = kt_rel_o(&bad, &good), rh = kt_rel_ht(&bad, &good);
    fprintf(stderr, "carry-late D 2 shard %zu: o %.3g ht %.3g\n", i, ro, rh);
    ck_assert_msg(ro >= SHOWS && rh >= SHOWS, "carry-late: o %.3g ht %.3g", ro, rh);
    c.mutant = KERN_MUTANT_SHARD_OFF_BY_ONE;
    kt_run_ok(K_AFFINE, &in, &c, &bad);
    ck_assert(kt_rel_o(&bad, &good) == 0);
  }
  gdn_inputs_clear(&in);
  kt_make(&in, (gdn_shape){1, 128, 2, 2, 16, 16}, 24, 0, 1, 0.002f);
  for (int h0 = 0; h0 < 2; h0++) {
    if (h0) {
      gdn_inputs_clear(&in);
      kt_make(&in, (gdn_shape){1, 128, 2, 2, 16, 16}, 24, 1, 1, 0.002f);
    }
    c = kt_cfg(GDN_DTYPE_F32, 16, 4);
    kt_run_ok(K_AFFINE, &in, &c, &good);
    c.mutant = KERN_MUTANT_H0_FIRST_ONLY;
    kt_run_ok(K_AFFINE, &in, &c, &bad);
    const double ro = kt_rel_o(&bad, &good), rh = kt_rel_ht(&bad, &good);
    fprintf(stderr, "h0-first-only h0 %d: o %.3g ht %.3g\n", h0, ro, rh);
    if (h0)
      ck_assert_msg(ro >= SHOWS && rh >= SHOWS, "h0-first-only: o %.3g ht %.3g", ro, rh);
    else
      ck_assert(kt_same_outputs(&bad, &good));
  }
  gdn_outputs_clear(&good);
  gdn_outputs_clear(&bad);
  gdn_inputs_clear(&in);
}
END_TEST

/* The bfloat16 rounding-point mutants in bfloat16 compute (MaxText's
 * rounding points, kern_num.h) at make_full's shape: each moves the
 * affine-prefix output (printed for docs/coverage.md's measurement).
 * bf16-cast-missing moves o by less than bfloat16's own rounding points move
 * it (the correct scan in bfloat16 vs float32 compute), so a tolerance that
 * admits bfloat16 compute admits it (docs/coverage.md, "The bfloat16 casts";
 * the grid cannot kill it); yet by > 1000x the correct affine-prefix's
 * distance from the scan at the same rounding points (float32 reassociation
 * only), which a rounding-point-exact check would see.  It leaves the scan and
 * a one-device run bit-identical. */
START_TEST(bf16_mutants) {
  gdn_inputs in;
  make_full(&in);
  gdn_outputs good = kt_outputs(), bad = kt_outputs(), scan = kt_outputs();
  kern_config c = kt_cfg(GDN_DTYPE_BF16, 16, 4);
  c.prefix = KERN_PREFIX_HILLIS_STEELE;
  kt_run_ok(K_AFFINE, &in, &c, &good);
  kt_run_ok(K_SCAN, &in, &c, &scan);
  const double roundoff = kt_rel_o(&good, &scan);
  kern_config c32 = kt_cfg(GDN_DTYPE_F32, 16, 1);
  kt_run_ok(K_SCAN, &in, &c32, &bad);
  const double bf16_points = kt_rel_o(&scan, &bad);
  fprintf(stderr, "bf16 compute: correct affine-prefix vs scan o %.3g; scan bf16 vs f32 compute o %.3g\n",
          roundoff, bf16_points);
  const kern_mutant ms[] = {KERN_MUTANT_BF16_CAST_MISSING, KERN_MUTANT_BF16_CAST_ADDED, KERN_MUTANT_BF16_SEAM};
  for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
    c.mutant = ms[i];
    kt_run_ok(K_AFFINE, &in, &c, &bad);
    const double ro = kt_rel_o(&bad, &good), rh = kt_rel_ht(&bad, &good);
    fprintf(stderr, "bf16 compute: mutant %-18s o %.3g ht %.3g\n", kern_mutant_name(c.mutant), ro, rh);
    /* bf16-seam rounds only the replay's incoming state: ht (from the
     * composition) is untouched */
    const int ht_moves = c.mutant != KERN_MUTANT_BF16_SEAM;
    ck_assert_msg(ro > 0 && (rh > 0) == ht_moves, "%s: o %.3g ht %.3g", kern_mutant_name(c.mutant), ro, rh);
    if (c.mutant == KERN_MUTANT_BF16_CAST_MISSING)
      ck_assert_msg(ro < bf16_points && ro > 1000 * roundoff, "bf16-cast-missing: o %.3g, bf16 points %.3g, reassociation %.3g",
                    ro, bf16_points, roundoff);
  }
  c.mutant = KERN_MUTANT_BF16_CAST_MISSING;
  kt_run_ok(K_SCAN, &in, &c, &bad);
  ck_assert(kt_same_outputs(&bad, &scan));
  c.devices = 1;
  c.mutant = KERN_MUTANT_NONE;
  kt_run_ok(K_AFFINE, &in, &c, &good);
  c.mutant = KERN_MUTANT_BF16_CAST_MISSING;
  kt_run_ok(K_AFFINE, &in, &c, &bad);
  ck_assert(kt_same_outputs(&bad, &good));
  gdn_outputs_clear(&scan);
  gdn_outputs_clear(&good);
  gdn_outputs_clear(&bad);
  gdn_inputs_clear(&in);
}
END_TEST

/* Kernel k on `in` (float32, C = 16, one device), correct and with each
 * mutant in turn: same[m] says whether mutant m's outputs are the correct
 * ones bit for bit. */
static void same_as_correct(kt_kernel k, const gdn_inputs *in, int same[KERN_MUTANT_COUNT]) {
  gdn_outputs good = kt_outputs(), bad = kt_outputs();
  kern_config c = kt_cfg(GDN_DTYPE_F32, 16, 1);
  kt_run_ok(k, in, &c, &good);
  for (int m = 1; m < KERN_MUTANT_COUNT; m++) {
    c.mutant = (kern_mutant)m;
    kt_run_ok(k, in, &c, &bad);
    same[m] = kt_same_outputs(&bad, &good);
  }
  gdn_outputs_clear(&good);
  gdn_outputs_clear(&bad);
}

/* On inputs without h0, on one device: a mutant that needs something
 * (kern_mutant.h's `needs`) leaves the affine-prefix bit-identical, one that
 * needs nothing moves it. */
START_TEST(needs_are_honest) {
  gdn_inputs in = kt_inputs((gdn_shape){1, 128, 2, 2, 16, 16}, 23, 0, 1, 0.002f);
  int same[KERN_MUTANT_COUNT];
  same_as_correct(K_AFFINE, &in, same);
  for (int m = 1; m < KERN_MUTANT_COUNT; m++)
    ck_assert_msg(same[m] == (kern_mutant_row_of((kern_mutant)m)->needs != 0), "%s: same %d",
                  kern_mutant_name((kern_mutant)m), same[m]);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(scan_ignores_mutants) {
  gdn_inputs in;
  make_full(&in);
  int same[KERN_MUTANT_COUNT];
  same_as_correct(K_SCAN, &in, same);
  for (int m = 1; m < KERN_MUTANT_COUNT; m++)
    ck_assert_msg(same[m], "%s changed the scan", kern_mutant_name((kern_mutant)m));
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(names) {
  gdn_error e;
  gdn_error_init(&e);
  for (int m = 0; m < KERN_MUTANT_COUNT; m++) {
    kern_mutant x = KERN_MUTANT_COUNT;
    ck_assert_int_eq(kern_mutant_parse(kern_mutant_name((kern_mutant)m), &x, &e), GDN_OK);
    ck_assert_int_eq(x, m);
    ck_assert_int_eq(kern_mutant_row_of((kern_mutant)m)->id, m);
    ck_assert(strlen(kern_mutant_row_of((kern_mutant)m)->doc) > 10);
  }
  kern_mutant x;
  ck_assert_int_eq(kern_mutant_parse("compose_order", &x, &e), GDN_ERR_INPUT);
  ck_assert(strstr(e.msg, "compose_order") && strstr(e.msg, "reset-late"));
}
END_TEST

CKR_MAIN("mutant", "mutant", 120, every_mutant_shows, new_families_show_where_they_must, bf16_mutants, needs_are_honest, scan_ignores_mutants, names)
