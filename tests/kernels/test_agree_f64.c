/* float64: the recurrence, the chunked scan and the affine prefix agree.
 *
 * In exact arithmetic all three are the same function (algorithm.md), for
 * every chunk size C and device count D; in float64 they differ only by
 * round-off.  Cases: B = 2, T = 517 (a multiple of none of the chunk sizes:
 * every case pads), grouped heads Hk = 2, Hv = 4, Dk = 16 != Dv = 12, with
 * h0, the in-kernel L2 norm on and off, gates as drawn and with a long memory
 * (g * 0.002: hundreds of tokens, so state really crosses chunk and device
 * boundaries); C in {1, 4, 16, 64}; D in {1, 2, 3, 4, 8} wherever D <= N
 * (uneven shards: 9 chunks over 2, 4, 8 devices at C = 64, 33 at C = 16 ...).
 *
 * Bound: ||x - y||_F / ||y||_F <= 1e-13 for o and ht, any pair of kernels.
 * Why: the forms share no rounding, so the bound must cover each one's own
 * error.  A float64 inner product of length n errs by at most gamma_n ~ n u
 * relative to the sum of |terms| (u = 2^-53 = 1.1e-16); the longest chains
 * here are the WY solve and products (n ~ C + Dk = 80) and, for the affine
 * form, one composition per chunk of a device (up to 517) -- but every
 * factor a_t (I - beta k k^T) has norm <= 1, so errors are not amplified
 * along the sequence, only added, and they add like a random walk.  The
 * worst-case chain is then ~ (80 + 517) u = 6.6e-14 < 1e-13; the measured
 * disagreement is 1e-16 .. 7e-16, some 150x below the bound, so a bug
 * (a wrong mask, a dropped padding row, a misplaced shard: all O(1e-2) or
 * worse) cannot hide under it. */
#include <check.h>

#include "kern_test_util.h"
#include "../check_runner.h"

#define BOUND 1e-13

static void agree(int l2norm, float decay) {
  gdn_shape s = {2, 517, 2, 4, 16, 12};
  gdn_inputs in = kt_inputs(s, 11 + (uint64_t)l2norm, 1, l2norm, decay);
  kern_config cfg = kt_cfg(GDN_DTYPE_F64, 64, 1);
  gdn_outputs rec = kt_outputs(), scan = kt_outputs(), aff = kt_outputs();
  kt_run_ok(K_RECURRENT, &in, &cfg, &rec);
  double worst = 0;
  static const int64_t Cs[] = {1, 4, 16, 64}, Ds[] = {1, 2, 3, 4, 8};
  for (int ci = 0; ci < 4; ci++) {
    cfg = kt_cfg(GDN_DTYPE_F64, Cs[ci], 1);
    kt_run_ok(K_SCAN, &in, &cfg, &scan);
    double so = kt_rel_o(&scan, &rec), sh = kt_rel_ht(&scan, &rec);
    ck_assert_msg(so <= BOUND && sh <= BOUND, "scan C=%ld vs recurrent: o %.3g ht %.3g",
                  (long)Cs[ci], so, sh);
    worst = fmax(worst, fmax(so, sh));
    for (int di = 0; di < 5; di++) {
      if (Ds[di] > gdn_shape_chunks(&s, Cs[ci])) continue;
      cfg = kt_cfg(GDN_DTYPE_F64, Cs[ci], Ds[di]);
      kt_run_ok(K_AFFINE, &in, &cfg, &aff);
      double ao = kt_rel_o(&aff, &scan), ah = kt_rel_ht(&aff, &scan);
      double ro = kt_rel_o(&aff, &rec), rh = kt_rel_ht(&aff, &rec);
      ck_assert_msg(ao <= BOUND && ah <= BOUND && ro <= BOUND && rh <= BOUND,
                    "affine C=%ld D=%ld: vs scan o %.3g ht %.3g, vs recurrent o %.3g ht %.3g",
                    (long)Cs[ci], (long)Ds[di], ao, ah, ro, rh);
      worst = fmax(worst, fmax(fmax(ao, ah), fmax(ro, rh)));
    }
  }
  /* also: the agreement is not vacuous -- the outputs are O(1) */
  double n2 = 0;
  for (size_t i = 0; i < gdn_shape_numel_v(&s); i++) n2 += rec.o[i] * rec.o[i];
  ck_assert(n2 > 1e-2);
  fprintf(stderr, "agree_f64 l2norm=%d decay=%g: worst relative disagreement %.3g (bound %.0e)\n",
          l2norm, (double)decay, worst, BOUND);
  gdn_outputs_clear(&rec);
  gdn_outputs_clear(&scan);
  gdn_outputs_clear(&aff);
  gdn_inputs_clear(&in);
}

/* The in-kernel L2 norm on and off, with a long memory and with the gates
 * as drawn. */
static const struct { int l2norm; float decay; } agree_cases[] = {{1, 0.002f}, {0, 0.002f}, {1, 1.0f}, {0, 1.0f}};

START_TEST(three_forms_agree) { agree(agree_cases[_i].l2norm, agree_cases[_i].decay); }
END_TEST

/* No h0 and Dk > Dv, head dim larger than one micro-tile in both
 * directions (Dk = 40, Dv = 24), T shorter than one C = 64 chunk. */
START_TEST(short_sequence_no_h0) {
  gdn_shape s = {1, 45, 1, 2, 40, 24};
  gdn_inputs in = kt_inputs(s, 5, 0, 1, 0.01f);
  kern_config cfg = kt_cfg(GDN_DTYPE_F64, 64, 1);
  gdn_outputs rec = kt_outputs(), x = kt_outputs();
  kt_run_ok(K_RECURRENT, &in, &cfg, &rec);
  static const int64_t Cs[] = {1, 4, 16, 64};
  for (int ci = 0; ci < 4; ci++) {
    cfg = kt_cfg(GDN_DTYPE_F64, Cs[ci], 1);
    kt_run_ok(K_SCAN, &in, &cfg, &x);
    ck_assert(kt_rel_o(&x, &rec) <= BOUND && kt_rel_ht(&x, &rec) <= BOUND);
    cfg.devices = gdn_shape_chunks(&s, Cs[ci]) < 3 ? gdn_shape_chunks(&s, Cs[ci]) : 3;
    kt_run_ok(K_AFFINE, &in, &cfg, &x);
    ck_assert(kt_rel_o(&x, &rec) <= BOUND && kt_rel_ht(&x, &rec) <= BOUND);
  }
  gdn_outputs_clear(&rec);
  gdn_outputs_clear(&x);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN_TABLE("agree_f64", "agree_f64", 120, agree_cases, (three_forms_agree), short_sequence_no_h0)
