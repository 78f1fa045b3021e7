/* parity_stream_tile: the inputs the mutant gqa-tile reads, for one head
 * group of a run streamed by head group.
 *
 * gqa-tile's value head hv reads key head hv mod Hk (jnp.tile) where the
 * correct program reads hv / (Hv / Hk) (jnp.repeat; kern_mutant.h).  A
 * group of key heads [k0, k1) holds value heads [v0, v1) = [k0 r, k1 r),
 * r = Hv / Hk; their tiled key heads lie mostly in other groups, and on
 * the group's own inputs the mutant would read other ones again (its Hk is
 * not the whole run's).  The tile view gives each of the group's value
 * heads a key head of its own: Hk' = Hv' = v1 - v0, key head j holding q
 * and k of the whole run's key head (v0 + j) mod Hk (loaded by the run's
 * source, a key head at a time, each once), and v, g, beta, h0, segment ids
 * the group's own.  With Hk' = Hv' the tile and the repeat read the same
 * key head j, so a kernel run on the view -- the mutant included --
 * performs, value head by value head, the operations the whole run's
 * gqa-tile performs on value head v0 + j, on the same data: the same bits
 * (tests/parity/test_sweep_stream.c, test_stream_paths.c).
 *
 * The forward only: gqa-tile has no backward (kern_mutant_row.backward 0),
 * so a row of it produces no gradients to sum over key heads.  The view
 * carries no bfloat16 prelude (kernels never read it; its heads would be
 * the group's).  Memory: the view's q and k, 2 B T Hv' Dk floats, and one
 * key head's inputs while it loads.
 */
#ifndef PARITY_STREAM_TILE_H
#define PARITY_STREAM_TILE_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "parity_sweep_stream.h"

typedef struct parity_stream_tile {
  gdn_inputs view; /* owns nothing but q and k (the rest is the group's): never gdn_inputs_clear it */
} parity_stream_tile;

void parity_stream_tile_init(parity_stream_tile *t);
/* Frees q and k; t re-initialised. */
void parity_stream_tile_clear(parity_stream_tile *t);

/* t's view for the group `group` (key heads from k0, value heads from
 * k0 Hv / Hk of the whole shape `whole`), its tiled key heads loaded by
 * src.  The group must outlive the view's use.  t initialised (cleared
 * first); on error cleared. */
int parity_stream_tile_make(parity_stream_tile *t, const gdn_inputs *group, const gdn_shape *whole, int64_t k0,
                            const parity_group_inputs *src, gdn_error *e);

#endif
