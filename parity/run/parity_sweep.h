/* parity_sweep: run one input set over a grid of configurations.
 *
 * An input set has a table of subjects (parity_subject.h): the built-in
 * rows (scan, affine-prefix), one row per external output, and any extra
 * rows.  Each case produces the outputs of its subjects, measures every
 * (subject, tensor) pair against the reference (and the candidate against
 * the scan), judges them with the policy and records the result: the
 * results document (parity_doc) and the console table (parity_log).
 *
 * Memory: the inputs, the reference, the chunk-stage subjects' outputs per
 * chunk size in turn and the case-stage subjects' outputs for one case at a
 * time (all as binary64 outputs), plus the kernels' own working sets.  The
 * extra rows (coverage's mutants) are produced, measured and released one
 * at a time: a case holds one extra output set however many rows it has.
 */
#ifndef PARITY_SWEEP_H
#define PARITY_SWEEP_H

#include <jansson.h>
#include <stdio.h>

#include "parity_progress.h"

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "kern_config.h"
#include "parity_oracle.h"
#include "parity_doc.h"
#include "parity_policy.h"
#include "parity_result.h"
#include "parity_subject.h"

#define PARITY_MAX_LIST 64

typedef struct parity_sweep_opts {
  int64_t chunks[PARITY_MAX_LIST];
  size_t n_chunks;
  int64_t devices[PARITY_MAX_LIST];
  size_t n_devices;
  int devices_default; /* 1: the built-in list, trimmed to the chunk count
                          instead of refused (an explicit list is refused) */
  kern_prefix prefixes[3];
  size_t n_prefixes;
  kern_shard shard; /* --shard: tokens (default, upstream's shard_map) or chunks */
  const char *shard_from; /* check: where shard came from (parity_check_shard.h); NULL elsewhere */
  kern_solve solve; /* --solve: substitution (default) or xla-expander, for both kernels */
  gdn_dtype dtype;
  kern_matmul matmul;
  int ftz; /* -1: auto (on in the bf16 modes, as TPU flushes), 0 off, 1 on */
  const parity_policy *policy;
  int verbosity; /* 0 quiet, 1 table, 2 every check */
  int reproducible; /* no per-case timings in the document */
  kern_mutant mutant; /* testing only: kern_config.mutant (kern_mutant.h), to show the gate fails it */
  FILE *log;     /* the table (stdout) */
  parity_progress *progress; /* the terminal's progress line; NULL: none */
  /* Subject rows added to every case after the built-in ones and the
   * externals (parity_subject.h); none by default.  Only their metrics
   * outlive their own measuring: each row's outputs are released before the
   * next row runs (so no extra row is the block map's subject). */
  const parity_subject_methods *const *extra;
  size_t n_extra;
  /* --grad: the cotangents every kernel subject's backward runs with (the
   * gradient rows are then measured against the reference's gradients);
   * NULL: the forward only, and nothing of gradients in any output. */
  const gdn_cotangents *ct;
} parity_sweep_opts;

void parity_sweep_opts_init(parity_sweep_opts *o); /* C = 64, D = 1,2,4,8, sequential, float32 */

/* Flush-to-zero in force: explicit, or automatically on whenever bfloat16
 * arithmetic is involved (dtype bfloat16, or bf16 matmul passes on float32):
 * TPU flushes subnormals in those units. */
int parity_sweep_ftz(const parity_sweep_opts *o);

/* The device counts to run at chunk size C: all of them, or for the default
 * list those that are valid (--shard chunks: no more than the chunk count;
 * --shard tokens: divisors of T).  Returns the count written. */
size_t parity_sweep_devices_for(const parity_sweep_opts *o, const gdn_shape *s, int64_t chunk,
                                int64_t *out);

/* The device counts whose layouts the error model covers
 * (parity_model_compute_layouts): under token sharding those of the chunk
 * size (each device's last chunk is padded where C does not divide T / D);
 * none under chunk sharding (whole chunks on every device). */
size_t parity_sweep_model_devices(const parity_sweep_opts *o, const gdn_shape *s, int64_t chunk, int64_t *out);

/* Checks that every configuration of the grid is valid for the shape (chunk
 * sizes, device counts against the chunk count) before anything runs. */
int parity_sweep_validate(const gdn_shape *s, const parity_sweep_opts *o, gdn_error *e);

/* One input set: ref holds the reference (tier NONE allowed). */
/* The progress steps parity_sweep_run takes for a shape: one per chunk
 * size (its scan) plus one per case.  Callers add them to o->progress
 * before the run, with their own steps. */
int64_t parity_sweep_steps(const parity_sweep_opts *o, const gdn_shape *s);

int parity_sweep_run(parity_doc *d, const gdn_inputs *in, const parity_input_info *info,
                     const parity_reference *ref, const parity_external *ext, size_t n_ext,
                     const parity_sweep_opts *o, gdn_error *e);

/* "B1-T4096-H4-D128-C64-D4-sequential-float32-highest" (Hk-Hv / Dk-Dv spelled
 * out when they differ). */
void parity_case_id(char *buf, size_t n, const gdn_shape *s, int64_t chunk, int64_t devices,
                    kern_prefix prefix, gdn_dtype dtype, kern_matmul matmul);

#endif
