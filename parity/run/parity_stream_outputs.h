/* parity_stream_outputs: a fixture's external outputs (/outputs/<name>: o,
 * ht and, with /cotangents, their stored gradients) in a run streamed by
 * head group (parity_sweep_stream.h), judged as the whole run judges them.
 *
 * Each output is a subject of stage PARITY_STAGE_INPUT (parity_subject.h):
 * the whole run measures it once against the reference, with the blocks of
 * kern_config_init's chunk size (the configuration the input stage runs
 * with), and per chunk size adds the error model's statistics (blocks of
 * that chunk size).  Streamed, the owner of each group (rank g mod N under
 * mpirun) keeps its slab of every output in scratch as it loads the group
 * (parity_stream_outputs_keep, the values as stored: float32, or binary64
 * for bfloat16 and the gradients), and measures its groups from scratch,
 * the ranks' parts merged (parity_stream_merge.h):
 *
 *   parity_stream_outputs_measure  per chunk size, every (output, tensor)
 *        pair against the reference with parity_mstream (every field of
 *        parity_metrics_compute_v + parity_metrics_blocks_v, the worst
 *        element and its index included, bit for bit the whole tensors')
 *        and parity_model_acc (parity_metrics_model_v's);
 *   per case, parity_stream_subject.h: the block map when an output's o
 *        has the worst block_rel, and the case's subject.
 *
 * With packed documents, as each group's reference is in scratch,
 * parity_stream_outputs_docs adds the packing verdict's maxima
 * (parity_packing_group.h) and masks o at padding tokens as
 * parity_padding_apply does whole (o then kept as binary64); the verdict
 * is recorded after the last group (parity_stream_outputs_record), before
 * any measurement.
 *
 * An output of final_state per_document keeps its ht's slab of every
 * group, (N, hg, Dk, Dv), and is measured against the oracle's states of
 * parity_stream_docstate.h with N in place of B, as the whole run does.
 *
 * So the results document equals the unstreamed run's byte for byte
 * (--reproducible).  Memory: none beyond the caller's three read buffers
 * (the largest group slab as binary64 each) and, per pair being measured,
 * parity_mstream's accumulators.  Scratch: every output's tensors.
 */
#ifndef PARITY_STREAM_OUTPUTS_H
#define PARITY_STREAM_OUTPUTS_H

#include <stddef.h>

#include "fix_fixture.h"
#include "parity_spill.h"
#include "parity_stream.h"
#include "parity_sweep_ctx.h"

/* A fixture run streamed (parity_stream_run.fixture): its outputs'
 * identity, the slab of the group its loader (parity_group_inputs) read
 * last, which holds that group's outputs and /oracle, and what the run
 * makes of a stored /oracle. */
typedef struct parity_stream_fixture {
  parity_external *ext; /* their packing verdict recorded after the oracle pass */
  size_t n_ext;
  const fix_fixture *(*slab)(void *src_ctx); /* called with parity_group_inputs.ctx */
  struct parity_stored_oracle *stored;        /* its /oracle (parity_stream_oracle.h), NULL: none */
  const size_t *index;                        /* ext[i] is the slab's outputs[index[i]] (NULL: i) */
  const gdn_inputs *seg_in; /* the file's segment ids and packing: per-document states' rows (NULL: none) */
  int grads_usable;         /* its /oracle/grads may stand in for the VJP, spot check pending (each slab holds
                               its part: parity_stored_grads.h) */
  const char *grads_why;    /* why not, when it has one ("" or NULL: none) */
} parity_stream_fixture;

typedef struct parity_stream_outputs {
  parity_external *ext; /* the outputs' identity (parity_externals_from_fixture of the file's metadata) */
  size_t n;
  size_t first;               /* subject index of ext[0] in the run's table */
  const parity_stream_plan *p;
  int64_t r;                  /* value heads per key head */
  int grads;                  /* the run judges gradients: the outputs' stored ones are kept */
  parity_spill_tensor (*t)[PARITY_T_N];
  unsigned *present;
  gdn_dtype (*out_dtype)[PARITY_T_N];
  const size_t *index;         /* ext[i] is a slab's outputs[index[i]] (NULL: i) */
  int64_t *counts[PARITY_T_N]; /* per group element counts (borrowed) */
  double *buf[3];              /* read buffers (borrowed) */
  struct parity_packing_acc *acc; /* per output: the packing verdict's maxima (parity_packing_group.h) */
  int pad;                     /* the inputs have padding tokens: o is kept as binary64, to be masked */
  /* final_state per_document (parity_stream_docstate.h): per output whether
   * it declares it (its ht kept as (N, hg, Dk, Dv) binary64 slabs), and the
   * oracle's states and the model's scales it is measured against */
  unsigned char *per_doc;
  const struct parity_stream_docstate *docs;
} parity_stream_outputs;

/* Empty (n 0): nothing kept or measured. */
void parity_stream_outputs_init(parity_stream_outputs *so);
/* n outputs whose subjects start at index `first`; counts and buf are the
 * caller's and outlive so (buf's the largest group slab, a per-document
 * ht's included); so->docs is set by the caller before the first keep. */
int parity_stream_outputs_open(parity_stream_outputs *so, parity_external *ext, size_t n, size_t first,
                               const parity_stream_plan *p, int grads, int64_t *const counts[PARITY_T_N],
                               double *const buf[3], gdn_error *e);
void parity_stream_outputs_clear(parity_stream_outputs *so);

/* Group g's slab of every output (slab: fix_group_read's of that group)
 * into scratch. */
int parity_stream_outputs_keep(parity_stream_outputs *so, int64_t g, const fix_fixture *slab, gdn_error *e);

/* Packed documents, once group g's reference o is in scratch (ref_o; `in`
 * the group's inputs): each output's packing maxima against it and against
 * the other packing's reference (tier, bits), as parity_packing_match
 * whole (parity_packing_group.h), then its o masked at padding tokens in
 * scratch where the output declares no padding (parity_padding_apply's
 * mask, slab by slab).  Nothing without segment ids. */
int parity_stream_outputs_docs(parity_stream_outputs *so, int64_t g, const gdn_inputs *in,
                               const parity_spill_tensor *ref_o, parity_oracle_tier tier, int bits, gdn_error *e);

/* Under mpirun, after the oracle pass (each group kept, and its packing
 * maxima added, by its owner): what the outputs hold as rank 0 read them
 * (the pairs to measure must be the same on every rank) and the packing
 * maxima merged over the ranks (exact).  Collective; one process: nothing. */
int parity_stream_outputs_share(parity_stream_outputs *so, int status, gdn_error *e);

/* After the last group: each output's packing verdict (whole: the run's
 * header, its segment ids and packing) recorded in so->ext. */
int parity_stream_outputs_record(parity_stream_outputs *so, const gdn_inputs *whole, gdn_error *e);

/* The outputs' measurements of chunk size `chunk` into x->meas (from index
 * so->first): against the reference tensors ref (ref_present bits), with
 * the model's scale tensors (model_present bits; 0: no model). */
int parity_stream_outputs_measure(const parity_stream_outputs *so, input_ctx *x, const parity_spill_tensor *ref,
                                  unsigned ref_present, const parity_spill_tensor *model, unsigned model_present,
                                  int64_t chunk, gdn_error *e);

/* Tensor t's heads in group g along its head axis: [*h0, *h1). */
void parity_stream_outputs_heads(const parity_stream_outputs *so, int64_t g, int t, int64_t *h0, int64_t *h1);
int parity_stream_outputs_head_axis(int t);

#endif
