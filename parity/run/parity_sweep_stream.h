/* parity_sweep_stream: one input set run by head group (parity_stream.h),
 * its results the whole run's.
 *
 * Value heads are independent, so a case can be produced a head group at a
 * time, holding one group's inputs and outputs; what must be met again
 * after every group has run is kept in scratch files (parity_spill.h).
 * The run, for one input set:
 *   1. the oracle, group by group (parity_oracle_group.h): each group's
 *      reference to scratch, its certificate's tally merged; kappa_G
 *      merged per chunk size (parity_kappa_acc); the inputs' SHA-256 is
 *      the caller's (parity_stream_run.sha256);
 *   2. per chunk size, group by group: the scan and every case's
 *      candidate produced and written to scratch; the seams' state sums
 *      merged (parity_rel_acc);
 *   3. per chunk size, the measurements from scratch, a group at a time:
 *      every metric (parity_metrics_stream: bit for bit the whole tensors'),
 *      the seams' o errors, the profiles, the upstream figures, the
 *      gradients' profiles and the block map (maxima over the groups, or
 *      rows of heads); then judged and recorded as parity_sweep_run does.
 * So the results document equals the unstreamed run's byte for byte
 * (--reproducible: no timings) on any shape both can run
 * (test_sweep_stream).  Memory: one group's inputs, cotangents, reference
 * or scan and candidate outputs, and the read-back buffers; scratch on disk:
 * the reference, and per chunk size the scan and each case's outputs.
 *
 * Under mpirun (every rank running the case) the groups are dealt: group
 * g's oracle, its kernels and its measurement run on rank g mod N with all
 * its threads, its outputs kept in that rank's scratch; the oracle's
 * tallies and the sets' heads are broadcast (parity_dist_bcast), and the
 * measurements merged (parity_stream_merge.h: exact, so every rank ends
 * with the one-process figures); rank 0 judges and records: its document
 * is the one-process run's.  (16 groups keep up to 16 ranks busy.)
 *
 * A fixture's external outputs are kept in scratch by each group's owner
 * as it loads the group and measured there, the ranks' parts merged
 * (parity_stream_outputs.h, parity_stream_subject.h); its stored /oracle
 * is read into the reference's scratch the same way, each rank's checks of
 * its slabs merged, and trusted or recomputed as the whole check decides
 * (parity_stream_oracle.h; with gradients only the VJP is computed by
 * group).
 *
 * Packed documents: every group runs under the run's segment ids
 * (parity_stream_seg.h).  The bfloat16 prelude: each group's inputs are
 * computed from its own heads' prelude (gdn_synth_generate_heads,
 * fix_group_read).  Extra subject rows of the case stage (coverage's
 * mutants): produced with each case's candidate a group at a time, one row
 * held at a time, into scratch (per case and row); measured a set at a
 * time against the reference and the scan; judged with the case.
 *
 * A mutant that reads key heads across groups (gqa-tile, with grouped
 * heads): the candidate under it, or its row, is produced on the group's
 * tile view (parity_stream_tile.h), which gives it the key heads it reads.
 *
 * --backend mpi's row (its devices are the ranks): every rank runs it
 * together, group after group, after its own groups; rank 0 gathers each
 * group's o and sends it to the group's owner, which keeps the set.
 *
 * Not streamed (the caller runs these whole or refuses): extra rows of
 * another stage.
 */
#ifndef PARITY_SWEEP_STREAM_H
#define PARITY_SWEEP_STREAM_H

#include "gdn_grads.h"
#include "parity_stream.h"
#include "parity_sweep.h"

/* Key heads [k0, k1) of the run's inputs into in (the group's shape), and
 * with ct non-NULL their cotangents (allocated here). */
typedef struct parity_group_inputs {
  int (*load)(void *ctx, int64_t k0, int64_t k1, gdn_inputs *in, gdn_cotangents *ct, gdn_error *e);
  void *ctx;
} parity_group_inputs;

typedef struct parity_stream_run {
  const parity_stream_plan *plan;
  parity_group_inputs src;
  const char *name, *source, *path; /* the input's identity (parity_input_info) */
  const char *sha256;       /* the inputs' SHA-256 as fix_inputs_sha256 gives it over the whole tensors:
                               a fixture's (checked on open), or synthetic inputs' drawn a range at a
                               time (fix_synth_inputs_sha256); what rank 0 records */
  const char *grad_sha256;  /* a fixture's grad_problem_sha256 with its /cotangents, else NULL */
  parity_oracle_tier tier;
  int oracle_bits;
  int grads; /* judge the backward too (cotangents from src) */
  const struct parity_stream_fixture *fixture; /* a fixture's outputs (parity_stream_outputs.h); NULL: none */
} parity_stream_run;

/* Why a run cannot be streamed ("" when it can): the message names it.
 * Packed documents and the bfloat16 prelude stream; extra rows stream when
 * produced per case (coverage's mutants, --backend mpi's row). */
void parity_sweep_stream_refusal(const gdn_inputs *first_group, const parity_sweep_opts *o, char *why, size_t n);

/* The most scratch bytes the run writes (as binary64 the reference, the
 * scan and one chunk size's cases, each with its extra rows), checked
 * against the scratch folder's free space before anything runs. */
double parity_sweep_stream_scratch_bytes(const parity_stream_plan *p, const parity_sweep_opts *o, int grads);

/* The progress steps parity_sweep_run_streamed takes. */
int64_t parity_sweep_stream_steps(const parity_stream_plan *p, const parity_sweep_opts *o);

int parity_sweep_run_streamed(parity_doc *d, const parity_stream_run *sr, const parity_sweep_opts *o, gdn_error *e);

#endif
