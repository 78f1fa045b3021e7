/* kern: the float implementations of the Gated DeltaNet layer under test.
 *
 * All kernels take the same inputs and write o and the final state ht into
 * `out` (initialised by the caller, allocated here).  They never read the
 * oracle.  Results are bit-identical for any thread count.
 *
 *   kern_scan            the stock chunked algorithm exactly as MaxText's
 *                        jax_chunk_gated_delta_rule computes it (algorithm.md
 *                        steps 1-4): intra-chunk WY factors, then a sequential
 *                        scan over chunks.
 *   kern_recurrent       the token-level recurrence.
 *   kern_affine_prefix   context parallelism over cfg->devices simulated
 *                        devices: the padded sequence's N chunks are split into
 *                        D contiguous shards (kern_affine_shard); each device
 *                        folds its chunks from (I, 0) into one (A, B); the D
 *                        pairs are gathered; the exclusive prefix is taken with
 *                        cfg->prefix; each device replays its chunks with the
 *                        scan body from its incoming state; ht is the full
 *                        composition applied to h0.  At most one (A, B) per
 *                        device is held at a time.  D = 1 equals kern_scan
 *                        bit for bit.
 */
#ifndef KERN_H
#define KERN_H

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "kern_config.h"

int kern_scan(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out, gdn_error *e);
int kern_recurrent(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out, gdn_error *e);
int kern_affine_prefix(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out,
                       gdn_error *e);

/* Shard r of D over N chunks: the first N mod D devices take ceil(N/D)
 * chunks, the others floor(N/D) (numpy.array_split's rule), in order. */
void kern_affine_shard(int64_t n_chunks, int64_t devices, int64_t r, int64_t *first_chunk,
                       int64_t *n_local);

#endif
