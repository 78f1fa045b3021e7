/* parity_sweep: run the kernels over a grid of configurations for one input
 * set, measure every error, apply the policy, and append the cases to the
 * results document (docs/results-json.md).
 *
 * Memory: the inputs, the reference, one scan result per chunk size in turn
 * and one affine-prefix result at a time (all as binary64 outputs), plus the
 * kernels' own working sets.
 */
#ifndef PARITY_SWEEP_H
#define PARITY_SWEEP_H

#include <jansson.h>
#include <stdio.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "kern_config.h"
#include "parity_oracle.h"
#include "parity_policy.h"

#define PARITY_MAX_LIST 64

/* A fixture's /outputs/<name>: an implementation run to be judged. */
typedef struct parity_external {
  const char *name;
  const gdn_outputs *out;
  int has_ht;
  json_t *attrs; /* borrowed: copied into each case's impls entry */
  int own_numerics; /* the output declared compute_dtype and matmul_precision */
  gdn_dtype dtype;
  kern_matmul matmul;
} parity_external;

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
  kern_solve solve; /* --solve: substitution (default) or xla-expander, for both kernels */
  gdn_dtype dtype;
  kern_matmul matmul;
  int ftz; /* -1: auto (on in the bf16 modes, as TPU flushes), 0 off, 1 on */
  const parity_policy *policy;
  int verbosity; /* 0 quiet, 1 table, 2 every check */
  int reproducible; /* no per-case timings in the document */
  int broken_compose; /* testing only: kern_config.broken_compose, to show the gate fails it */
  FILE *log;     /* the table (stdout) */
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

typedef struct parity_input_info {
  const char *name;   /* "synthetic seed 0", a fixture's file name */
  const char *source; /* "synthetic" or "fixture" */
  const char *path;   /* fixture path or NULL */
  const char *sha256; /* schema-v1 inputs_sha256, or NULL */
} parity_input_info;

typedef struct parity_doc {
  json_t *root, *inputs, *cases;
  size_t n_cases, n_failed;
  int have_oracle, min_certified, precision_bits, check_bits, min_guaranteed;
  int mixed_tiers; /* inputs were judged against different tiers */
  int64_t sampled_columns, total_columns;
  parity_oracle_tier tier;
  double t_start, t_oracle, t_kernels;
} parity_doc;

/* command: the command line as one string (for the report). */
int parity_doc_init(parity_doc *d, const char *command, const parity_policy *policy, gdn_error *e);
/* Sets pass, exit_status, oracle and (unless reproducible) created and timing. */
int parity_doc_finish(parity_doc *d, int reproducible, gdn_error *e);
void parity_doc_clear(parity_doc *d);
int parity_doc_pass(const parity_doc *d);

/* Checks that every configuration of the grid is valid for the shape (chunk
 * sizes, device counts against the chunk count) before anything runs. */
int parity_sweep_validate(const gdn_shape *s, const parity_sweep_opts *o, gdn_error *e);

/* One input set: ref holds the reference (tier NONE allowed). */
int parity_sweep_run(parity_doc *d, const gdn_inputs *in, const parity_input_info *info,
                     const parity_reference *ref, const parity_external *ext, size_t n_ext,
                     const parity_sweep_opts *o, gdn_error *e);

/* "B1-T4096-H4-D128-C64-D4-sequential-float32-highest" (Hk-Hv / Dk-Dv spelled
 * out when they differ). */
void parity_case_id(char *buf, size_t n, const gdn_shape *s, int64_t chunk, int64_t devices,
                    kern_prefix prefix, gdn_dtype dtype, kern_matmul matmul);

#endif
