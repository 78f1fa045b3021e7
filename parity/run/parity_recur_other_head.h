/* parity_recur_other_head: what the KDA mutant gate-other-head reads, for
 * one key-head group of a run streamed by key-head group
 * (parity_recur_stream.h).
 *
 * The mutant's value head hv decays by the gate of value head
 * (hv + 1) mod Hv (kern_kda.h), in the token loop and in the chunked
 * kernels' replay; the affine-prefix kernel's folds read each head's own
 * gate (kern_kda_chunk_tmpl.h).  A group of key heads [k0, k1) holds value
 * heads [v0, v1) = [k0 r, k1 r), r = Hv / Hk: its last value head reads
 * head v1 mod Hv, which the next group holds, and on the group's own
 * inputs it would read the group's head v0 instead.  The extended group
 * appends key head k1 mod Hk with its r value heads (q, k, v, beta, h0
 * and the gate drawn as the whole draw draws them: gdn_synth_generate_heads,
 * gdn_chgate_draw_kimi_heads).  On it, value head j < v1 - v0 reads under
 * the mutant gate (j + 1) mod (v1 - v0 + r) = j + 1, the whole run's
 * (v0 + j + 1) mod Hv, and its folds its own: every operation of the whole
 * run's mutant on value head v0 + j, on the same data.  So the first
 * v1 - v0 value heads of a kernel's outputs on the extended group are the
 * whole run's, bit for bit (tests/parity/test_kda_stream.c); the appended
 * heads' outputs are dropped (parity_recur_other_head_cut).
 *
 * Cost: the kernels of one key head more per group, for that mutant only.
 */
#ifndef PARITY_RECUR_OTHER_HEAD_H
#define PARITY_RECUR_OTHER_HEAD_H

#include <stdint.h>

#include "gdn_chgate.h"
#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "gdn_synth.h"

/* The extended group of key heads [k0, k1) of the whole shape s (synthetic
 * inputs by so, the Kimi gate from seed) into in and gate (initialised;
 * allocated here; cleared on error). */
int parity_recur_other_head_draw(const gdn_shape *s, const gdn_synth_opts *so, uint64_t seed, int64_t k0, int64_t k1,
                                 gdn_inputs *in, gdn_chgate *gate, gdn_error *e);

/* x's o and ht (float64, of the extended group's shape) cut to their first
 * gs->Hv value heads, into out (initialised; allocated at shape gs). */
int parity_recur_other_head_cut(const gdn_outputs *x, const gdn_shape *gs, gdn_outputs *out, gdn_error *e);

#endif
