/* kern_mutant: the catalogue of context-parallel bugs (testing only).
 *
 * Each row is one bug a context-parallel GDN implementation plausibly has,
 * switched on by kern_config.mutant.  A forward mutant only ever changes
 * kern_affine_prefix (its fold, prefix, replay and the chunk loads they make
 * through kchunk); a backward row (the column `backward`) only
 * kern_affine_prefix_vjp; kern_scan, kern_recurrent and the oracle never read
 * the field, so the stock baseline and the true answer stay what they are.
 * KERN_MUTANT_NONE is bit-identical to the kernel without the field.
 *
 * The table (kern_mutant.c) gives each row its name (the CLI spelling), the
 * shapes it needs to show at all (devices >= 2, h0, GQA, packed documents,
 * Hillis-Steele, bfloat16, more than 4 devices, judged gradients) and a docstring saying what upstream code would
 * have to look like to contain it.  Behaviour is chosen from the row's kind
 * at the few places the kernel consults (kern_affine_tmpl.h,
 * kern_chunk_tmpl.h, kern_prefix_tmpl.h), not from scattered flags. */
#ifndef KERN_MUTANT_H
#define KERN_MUTANT_H

#include "gdn_error.h"

typedef enum kern_mutant {
  KERN_MUTANT_NONE = 0,
  KERN_MUTANT_COMPOSE_ORDER,   /* (A1,B1) o (A2,B2): earlier after later */
  KERN_MUTANT_SEAM_DECAY,      /* first chunk of devices r >= 1: carried state not decayed */
  KERN_MUTANT_CARRY_ZERO,      /* devices r >= 1 start from zero */
  KERN_MUTANT_SHARD_OFF_BY_ONE, /* fold of device r >= 1 starts one token (chunk) early */
  KERN_MUTANT_PAD_UNMASKED,    /* pads keep g (chunk pads repeat the last gate) */
  KERN_MUTANT_PREFIX_INCLUSIVE, /* device r starts from the inclusive prefix r */
  KERN_MUTANT_FINAL_FROM_REPLAY, /* ht = the last device's replay, not the composition */
  KERN_MUTANT_H0_IGNORED,      /* device 0 starts from zero */
  KERN_MUTANT_H0_EVERY,        /* devices r >= 1 add h0 to their carried state */
  KERN_MUTANT_GQA_TILE,        /* key head hv mod Hk (tile) instead of hv / (Hv/Hk) (repeat) */
  KERN_MUTANT_SCALE_TWICE,     /* q scaled by scale^2 */
  KERN_MUTANT_SCALE_NONE,      /* q not scaled */
  KERN_MUTANT_BF16_SEAM,       /* the carried state rounded to bfloat16 at the seam */
  KERN_MUTANT_HS_REVERSED,     /* Hillis-Steele rounds in reverse order (largest stride first) */
  KERN_MUTANT_RESET_MISSING,   /* packing = reset: boundary tokens not reset */
  KERN_MUTANT_RESET_LATE,      /* packing = reset: the reset one token after the boundary */
  KERN_MUTANT_BF16_CAST_MISSING, /* bfloat16 compute: the fold's U, W not rounded to bfloat16 */
  KERN_MUTANT_BF16_CAST_ADDED, /* the folded (A, B) pairs rounded to bfloat16 before the prefix */
  KERN_MUTANT_HS_TWO_ROUNDS,   /* Hillis-Steele with a fixed 2 rounds (strides 1, 2): right for D <= 4 */
  KERN_MUTANT_CARRY_LATE,      /* the carried state one token (chunk) late: fold r ends one token into r + 1 */
  KERN_MUTANT_FINAL_DEVICE_0,  /* ht = device 0's replay carry (a per-device value read as replicated) */
  KERN_MUTANT_H0_FIRST_ONLY,   /* h0 given to device 0 only: the prefix's carries and ht drop A_cum h0 */
  KERN_MUTANT_GRAD_SEAM_STOPPED, /* backward only: no gradient through the carried state (stop_gradient) */
  KERN_MUTANT_COUNT
} kern_mutant;

/* What a mutant needs to differ from the correct program at all. */
enum {
  KERN_MUTANT_NEEDS_DEVICES = 1u << 0, /* devices >= 2 */
  KERN_MUTANT_NEEDS_H0 = 1u << 1,      /* a non-zero h0 */
  KERN_MUTANT_NEEDS_GQA = 1u << 2,     /* Hk >= 2 and Hv > Hk */
  KERN_MUTANT_NEEDS_DOCS = 1u << 3,    /* packed documents (resets or pads) */
  KERN_MUTANT_NEEDS_HS = 1u << 4,      /* prefix = hillis-steele, devices >= 3 */
  KERN_MUTANT_NEEDS_PAD = 1u << 5,     /* a padded position: C does not divide the piece */
  KERN_MUTANT_NEEDS_BF16 = 1u << 6,    /* compute dtype bfloat16 (its rounding points) */
  KERN_MUTANT_NEEDS_D5 = 1u << 7,      /* devices >= 5 (a third prefix round) */
  KERN_MUTANT_NEEDS_GRAD = 1u << 8,    /* gradients judged: the forward is the correct program's */
};

typedef struct kern_mutant_row {
  kern_mutant id;
  const char *name;
  unsigned needs;
  const char *doc; /* what upstream code would have to look like to contain it */
  /* 1: the project's recommended grid (grids/upstream-pr.json) kills it, so
   * it is killable and no README may call it unkillable (parity_readme.h);
   * tests/parity/test_coverage runs that grid and asserts this column. */
  int killed_by_recommended;
  /* 1: the bug is in the backward only (kern_vjp.h honours it, the forward
   * is bit-identical to the correct program's); 0: in the forward only,
   * and the backward refuses the row (it has no backward). */
  int backward;
} kern_mutant_row;

/* The row of m (m < KERN_MUTANT_COUNT); row 0 is "none". */
const kern_mutant_row *kern_mutant_row_of(kern_mutant m);
const char *kern_mutant_name(kern_mutant m);
/* The name of one KERN_MUTANT_NEEDS_* bit ("devices", "h0", "gqa",
 * "documents", "hillis-steele", "padding", "bfloat16", "devices-over-4",
 * "gradients"), NULL for a bit the
 * catalogue does not define. */
const char *kern_mutant_need_name(unsigned bit);
/* By name; the message lists the names. */
int kern_mutant_parse(const char *s, kern_mutant *out, gdn_error *e);

#endif
