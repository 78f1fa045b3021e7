/* parity_stored_grads: a fixture's stored gradient oracle (/oracle/grads,
 * written by regen --grads) as the run's gradient reference, instead of the
 * oracle's VJP computed by the check (60 % of a check --grad's time at a
 * layer's length).
 *
 * Trusted when the stored forward is (its /oracle taken as the reference),
 * present, fresh (its grad_problem_sha256 -- the inputs'
 * problem and the cotangents -- equals the file's), certified to at least
 * PARITY_STORED_GRADS_MIN_BITS, and agreeing with a spot check: one key
 * head's VJP (all its value heads, every token) recomputed by the dd tier
 * without a sample, whose six tensors must lie within 2^-40 of the stored
 * ones, normwise, each.  Both round a value certified far past binary64 to
 * binary64, so agreement is ~1e-16; a forged, mis-scaled or other
 * cotangents' gradient differs by far more.  Sampled: a stored gradient
 * wrong only in other key heads passes the spot check (as the forward's
 * spot check samples state columns); its certificate is the regen's. */
#ifndef PARITY_STORED_GRADS_H
#define PARITY_STORED_GRADS_H

#include <stddef.h>
#include <stdint.h>

#include "fix_fixture.h"
#include "gdn_chgate.h"
#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "parity_oracle.h"

#define PARITY_STORED_GRADS_MIN_BITS FIX_ORACLE_GRADS_MIN_BITS
/* The stored gradients come with the stored forward: when the check does
 * not take the stored /oracle (stale, weak, its spot check), it takes none
 * of them either, whole and streamed alike, and says so. */
#define PARITY_STORED_GRADS_NO_FORWARD "the stored /oracle is not used, so neither are the gradients stored with it"
#define PARITY_STORED_GRADS_SPOT 0x1p-40 /* the spot check's normwise tolerance */

/* Whether orc's stored gradients may be tried (present, fresh, certified
 * enough); *why (n bytes) says why not when they are present. */
int parity_stored_grads_usable(const fix_oracle *orc, char *why, size_t n);

/* Key head kh of in (and its cotangents) recomputed by the dd VJP and
 * compared with stored (in's shape: the whole run or a group's slab):
 * *rel the largest normwise difference over the six tensors (+inf for a
 * NaN).  gate: a KDA fixture's per-channel gate (the KDA dd VJP,
 * oracle_kda_vjp.h; stored's dg per channel); NULL: Gated DeltaNet's. */
int parity_stored_grads_spot(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                             const gdn_grads *stored, int64_t kh, double *rel, gdn_error *e);

/* "stored /oracle/grads not used: WHY; recomputed" into note (n bytes): the
 * document's oracle_grad_note, the same words whole and streamed. */
void parity_stored_grads_note(char *note, size_t n, const char *why);

/* The stored certificate into ref's gradient fields (grad_tier,
 * grad_certified_bits, grad_normwise_bits, grad_sha256, has_grads,
 * grads_from_fixture); the data is the caller's to move. */
void parity_stored_grads_take(const fix_oracle *orc, parity_reference *ref);

#endif
