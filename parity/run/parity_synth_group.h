/* parity_synth_group: a synthetic input set's head group, for a run
 * streamed by head group (parity_sweep_stream.h's parity_group_inputs).
 *
 * Key heads [k0, k1) of gdn_synth_generate(spec): every value -- q, k, v,
 * g, beta, h0 and the bfloat16 prelude -- bit for bit the one the whole
 * generation draws at the same place (gdn_synth_generate_heads), the
 * (B, T) segment ids and packing of spec's packed documents (per token:
 * every group draws the same ones, gdn_synth_segments), and with ct the
 * group's share of gdn_cotangents_synth(seed) (gdn_cotangents_synth_heads).
 * The caller's `gdn-parity` run, `sweep` entries and coverage's entries all
 * load their groups here. */
#ifndef PARITY_SYNTH_GROUP_H
#define PARITY_SYNTH_GROUP_H

#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "parity_grid.h"

/* ctx: a const parity_synth_spec *.  in and ct initialised (ct may be NULL:
 * no cotangents); filled here. */
int parity_synth_group_load(void *ctx, int64_t k0, int64_t k1, gdn_inputs *in, gdn_cotangents *ct, gdn_error *e);

#endif
