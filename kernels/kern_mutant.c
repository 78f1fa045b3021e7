/* The mutant catalogue (kern_mutant.h): one row per bug, in enum order;
 * the last column: killed by grids/upstream-pr.json (checked by
 * tests/parity/test_coverage against a coverage run of that grid). */
#include "kern_mutant.h"

#include <string.h>

#define D_ KERN_MUTANT_NEEDS_DEVICES
static const kern_mutant_row rows[KERN_MUTANT_COUNT] = {
    {KERN_MUTANT_NONE, "none", 0, "the correct program", 0, 0},
    {KERN_MUTANT_COMPOSE_ORDER, "compose-order", D_,
     "the combine of the prefix written as combine(later, earlier) -> (A_e A_l, A_e B_l + B_e): "
     "the affine maps composed in the wrong order", 1, 0},
    {KERN_MUTANT_SEAM_DECAY, "seam-decay", D_,
     "each shard's local scan starts its first chunk with exp(G) taken as 1 for the carried state "
     "(h_in not multiplied by the chunk's cumulative decay), in the fold and the replay alike", 1, 0},
    {KERN_MUTANT_CARRY_ZERO, "carry-zero", D_,
     "the replay of every shard but the first called with initial_state = zeros (the gathered "
     "prefix computed but never passed in)", 1, 0},
    {KERN_MUTANT_SHARD_OFF_BY_ONE, "shard-off-by-one", D_,
     "the fold slices its shard as x[r*L - 1 : (r+1)*L] (one token, or with chunk sharding one "
     "chunk, of the previous shard folded twice) while the replay slices x[r*L : (r+1)*L]", 1, 0},
    {KERN_MUTANT_PAD_UNMASKED, "pad-unmasked", KERN_MUTANT_NEEDS_PAD,
     "g padded with its last value (jnp.pad mode='edge') or not zeroed at a document pad, so a "
     "padded position still decays the state", 1, 0},
    {KERN_MUTANT_PREFIX_INCLUSIVE, "prefix-inclusive", D_,
     "device r takes prefix[r] instead of prefix[r-1] (the inclusive scan used where the "
     "exclusive one is meant: its own shard applied twice)", 1, 0},
    {KERN_MUTANT_FINAL_FROM_REPLAY, "final-from-replay", D_,
     "final_state taken from the last device's replay instead of A_cum[D-1] h0 + B_cum[D-1]: the "
     "same value in exact arithmetic, a different rounding", 0, 0},
    {KERN_MUTANT_H0_IGNORED, "h0-ignored", KERN_MUTANT_NEEDS_H0,
     "device 0's replay called without initial_state (the other devices get it through the "
     "prefix)", 1, 0},
    {KERN_MUTANT_H0_EVERY, "h0-every", D_ | KERN_MUTANT_NEEDS_H0,
     "every device's replay passed initial_state = h0 and the carried prefix added on top", 1, 0},
    {KERN_MUTANT_GQA_TILE, "gqa-tile", KERN_MUTANT_NEEDS_GQA,
     "the key heads expanded with jnp.tile (head hv reads key head hv mod Hk) instead of "
     "jnp.repeat (hv / (Hv/Hk))", 1, 0},
    {KERN_MUTANT_SCALE_TWICE, "scale-twice", 0,
     "q multiplied by scale before the call and again inside the kernel", 1, 0},
    {KERN_MUTANT_SCALE_NONE, "scale-none", 0, "the kernel's q * scale left out", 1, 0},
    {KERN_MUTANT_BF16_SEAM, "bf16-seam", D_,
     "the gathered state cast to the activation dtype (bfloat16) for the all-gather and used "
     "as the replay's initial_state without the cast back", 1, 0},
    {KERN_MUTANT_HS_REVERSED, "hs-reversed", D_ | KERN_MUTANT_NEEDS_HS,
     "the Hillis-Steele loop over strides written for s in reversed(strides): the longest "
     "stride first", 1, 0},
    {KERN_MUTANT_RESET_MISSING, "reset-missing", KERN_MUTANT_NEEDS_DOCS,
     "segment ids ignored by the kernel: the state flows across a packed document boundary", 1, 0},
    {KERN_MUTANT_RESET_LATE, "reset-late", KERN_MUTANT_NEEDS_DOCS,
     "the reset mask built from segment_ids[t] != segment_ids[t - 2] (or shifted by one): no "
     "reset at the boundary and one where there is none", 1, 0},
    {KERN_MUTANT_BF16_CAST_MISSING, "bf16-cast-missing", D_ | KERN_MUTANT_NEEDS_BF16,
     "the local fold written as its own function that builds each chunk's (A, B) from "
     "u = A v_beta and w = A (k_beta exp(G)) without the .astype(compute_dtype) the stock scan "
     "applies to them, so with compute_dtype = bfloat16 the gathered maps come from float32 U, "
     "W while every replay (the stock scan body) uses the rounded ones", 0, 0},
    {KERN_MUTANT_BF16_CAST_ADDED, "bf16-cast-added", D_,
     "the folded pair cast for the all-gather, all_gather(A_loc.astype(jnp.bfloat16)) and "
     "likewise B_loc, and the prefix composed from the rounded pairs (a cast the float32 path "
     "and upstream's bfloat16 path, which keep the state in float32, do not have); bf16-seam is "
     "the same cast on the carried state after the prefix", 1, 0},
    {KERN_MUTANT_HS_TWO_ROUNDS, "hs-two-rounds", D_ | KERN_MUTANT_NEEDS_HS | KERN_MUTANT_NEEDS_D5,
     "the Hillis-Steele prefix written with its rounds unrolled for the devices at hand, for s in "
     "(1, 2), instead of while s < D: exact up to 4 devices, devices 5 .. 8 miss the stride-4 round "
     "(bit-identical to the correct program at D <= 4; hs-reversed has every round, in the wrong order)", 1, 0},
    {KERN_MUTANT_CARRY_LATE, "carry-late", D_,
     "the fold slices its shard with an inclusive end, x[r*L : (r+1)*L + 1] (with chunk sharding one "
     "chunk more), so the state carried into device r+1 is the state after its own first token, which "
     "its replay then applies again; the mirror of shard-off-by-one (whose fold starts early, so only "
     "devices r >= 2 see it): here device 1 and ht see it too", 1, 0},
    {KERN_MUTANT_FINAL_DEVICE_0, "final-device-0", D_,
     "final_state returned from shard_map with out_specs=P() (replicated, check_rep off) while each "
     "device holds its own replay's carry: the caller reads device 0's, the state after the first "
     "shard; final-from-replay reads the right device (the last) and differs by rounding only", 1, 0},
    {KERN_MUTANT_H0_FIRST_ONLY, "h0-first-only", D_ | KERN_MUTANT_NEEDS_H0,
     "initial_state passed to device 0's replay only and the prefix applied to zeros: devices r >= 1 "
     "start from B_cum[r-1] and ht = B_cum[D-1], the A_cum h0 terms dropped; the mirror of h0-ignored "
     "(device 0 alone loses h0), unlike h0-every (h0 added again) and carry-zero (the whole carry lost)", 1, 0},
    {KERN_MUTANT_GRAD_SEAM_STOPPED, "grad-seam-stopped", D_ | KERN_MUTANT_NEEDS_GRAD,
     "the carried state wrapped in lax.stop_gradient (or a custom_vjp whose backward returns zeros "
     "for it) before the replay: the forward is exact, but no cotangent reaches the prefix from the "
     "replays, so the gradients of every earlier device's inputs and of h0 miss the later tokens' "
     "part; the one backward-only row (the gradients must be judged to see it)", 1, 1},
};
#undef D_

const kern_mutant_row *kern_mutant_row_of(kern_mutant m) {
  return (unsigned)m < KERN_MUTANT_COUNT ? &rows[m] : &rows[0];
}

const char *kern_mutant_name(kern_mutant m) { return kern_mutant_row_of(m)->name; }

int kern_mutant_parse(const char *s, kern_mutant *out, gdn_error *e) {
  if (!s) s = "";
  for (int i = 0; i < KERN_MUTANT_COUNT; i++)
    if (strcmp(s, rows[i].name) == 0) {
      *out = (kern_mutant)i;
      return GDN_OK;
    }
  char names[1024] = "";
  for (int i = 0; i < KERN_MUTANT_COUNT; i++) {
    strncat(names, rows[i].name, sizeof names - strlen(names) - 3);
    if (i + 1 < KERN_MUTANT_COUNT) strncat(names, ", ", sizeof names - strlen(names) - 1);
  }
  return gdn_error_set(e, GDN_ERR_INPUT, "unknown mutant '%s' (one of: %s)", s, names);
}

const char *kern_mutant_need_name(unsigned bit) {
  /* Index b names the bit 1u << b (the enum in kern_mutant.h). */
  static const char *const names[] = {"devices",  "h0",       "gqa",           "documents", "hillis-steele",
                                      "padding", "bfloat16", "devices-over-4", "gradients"};
  return bit < sizeof names / sizeof names[0] ? names[bit] : NULL;
}
