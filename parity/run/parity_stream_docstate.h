/* parity_stream_docstate: per-document final states (final_state
 * per_document, parity_docstate.h) in a run streamed by head group
 * (parity_sweep_stream.h), judged as the whole run judges them.
 *
 * The whole run builds N rows, one per document (parity_docstate_rows),
 * and runs the oracle and the error model over them.  Every work item of
 * both lies inside one value head, and a group's rows (built from the
 * group's inputs: the segment ids are every group's) are the whole rows'
 * slab of its heads, so streamed:
 *
 *   parity_stream_docstate_begin   before an oracle pass: the rows' tier
 *        (the reference's: computed, or a stored /oracle's) and bits;
 *   parity_stream_docstate_group   the owner of group g, as it loads it:
 *        the oracle of the group's rows (parity_group_oracle over the
 *        rows' whole shape, the dd samples placed by whole head index)
 *        into scratch, (N, hg, Dk, Dv), its tally kept;
 *   parity_stream_docstate_finish  after the pass, collective: each
 *        group's status and tally from its owner, folded in group order:
 *        the whole run's tier and certified bits (docs_tier,
 *        docs_certified_bits) bit for bit;
 *   parity_stream_docstate_model   per chunk size, the owner of group g:
 *        the rows' error model of its heads (parity_docstate_model, head0
 *        the group's) into scratch.
 *
 * parity_stream_outputs measures each such output's ht (its slab kept by
 * group, read by hyperslab) against these with N in place of B, so the
 * document equals the whole run's byte for byte (--reproducible).
 * Memory per group: the rows (N x the longest span x the group's heads:
 * up to N/B times the group's inputs under packing leak) and their
 * oracle's states.  Scratch: the states and the model's scales,
 * N x Hv x Dk x Dv binary64 each.
 */
#ifndef PARITY_STREAM_DOCSTATE_H
#define PARITY_STREAM_DOCSTATE_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "kern_config.h"
#include "parity_oracle_group.h"
#include "parity_spill.h"
#include "parity_stream.h"

typedef struct parity_stream_docstate {
  int on;                 /* some output declares final_state per_document */
  int reset;              /* the packing: reset (else leak), for the outputs' notes */
  gdn_shape rows;         /* the rows' whole shape: B the documents, T the longest span */
  const parity_stream_plan *p;
  int64_t *counts;        /* per group: N x its value heads x Dk x Dv */
  size_t most;            /* the largest of counts */
  parity_spill_tensor ref, model;
  int model_on;           /* model holds this chunk size's scales (every rank) */
  parity_group_oracle go;
  parity_group_tally *gt; /* per group, until the exchange */
  struct docs_head *head; /* per group: the owner's status */
  parity_oracle_tier tier; /* after finish: the rows' reference */
  int certified_bits;
} parity_stream_docstate;

void parity_stream_docstate_init(parity_stream_docstate *d);
/* seg_in: the file's segment ids and packing (the fixture's metadata).
 * Off (nothing kept) unless `on`. */
int parity_stream_docstate_open(parity_stream_docstate *d, int on, const gdn_inputs *seg_in,
                                const parity_stream_plan *p, gdn_error *e);
void parity_stream_docstate_clear(parity_stream_docstate *d);

/* Before each oracle pass (a stored /oracle refused runs a second). */
void parity_stream_docstate_begin(parity_stream_docstate *d, parity_oracle_tier tier, int bits);
/* The owner's side: group g's states (in: its inputs, key heads from k0);
 * an error is kept for the exchange. */
void parity_stream_docstate_group(parity_stream_docstate *d, int64_t g, const gdn_inputs *in, int64_t k0);
/* Collective: the groups' statuses and tallies, folded; d->tier and
 * d->certified_bits set. */
int parity_stream_docstate_finish(parity_stream_docstate *d, gdn_error *e);
/* The owner's side: group g's model scales at this chunk size and
 * configuration (the whole run's chunk_model). */
int parity_stream_docstate_model(parity_stream_docstate *d, int64_t g, const gdn_inputs *in, int64_t k0,
                                 int64_t chunk, const kern_config *cfg, gdn_error *e);

#endif
