/* parity_sweep_ctx: what the whole-tensor sweep (parity_sweep.c) and the
 * run streamed by head group (parity_sweep_stream.c) share: the input's
 * subject table and context, and the steps of a case that do not read the
 * subjects' outputs (describe, judge).  Private to parity/. */
#ifndef PARITY_SWEEP_CTX_H
#define PARITY_SWEEP_CTX_H

#include "parity_kappa.h"
#include "parity_kappa_model.h"
#include "parity_sweep.h"

#define MAX_PROFILE_BLOCKS 256

/* One input set: its subject table, what each stage measured, and the
 * per-chunk profiles of the reference and the baseline. */
typedef struct input_ctx {
  parity_doc *d;
  const gdn_inputs *in;
  const parity_reference *ref; /* NULL without a reference */
  const parity_sweep_opts *o;
  int64_t input_index;
  parity_subject_run *subj;
  parity_subject_result *meas; /* per subject: its last measurement */
  size_t n_subj, baseline, candidate;
  kern_config cfg;             /* the case's numerics; chunk, devices, prefix as they run */
  int64_t n_chunks, block, n_blocks;
  double *prof_ref, *prof_base; /* per chunk size */
  const parity_kappa *kappa;    /* the case's kappa_G given (a streamed run: its inputs are
                                   not held); NULL: computed from in */
  parity_model model;           /* the error model of the chunk size (parity_kappa_model.h) */
  int has_model;                /* model computed: with a reference, float32 or bfloat16 compute */
} input_ctx;

/* x for an input of doc d under options o: the case's numerics from o
 * (the rest zero: in, ref, the subject table are the caller's). */
void parity_sweep_ctx_init(input_ctx *x, parity_doc *d, const parity_sweep_opts *o);
/* The chunk stage's configuration (the scan: one device, the default
 * prefix), kept chunk size and numerics. */
void parity_sweep_scan_config(input_ctx *x);
/* A chunk size begins: its configuration, the profile's blocks over s, the
 * reference's and the baseline's profiles allocated (zero). */
int parity_sweep_chunk_begin(input_ctx *x, const gdn_shape *s, int64_t chunk, gdn_error *e);
/* The seam before `device` placed in sm from r's pieces (device, its first
 * chunk, its first real token, the padding before it); returns the end of
 * the chunk after the seam (its real tokens only). */
int64_t parity_sweep_seam_place(const parity_case_result *r, parity_seam_result *sm, int64_t device);
/* The seam between device - 1 and device, every (b, head) of s: the
 * incoming state against the one the previous device ended with. */
void parity_sweep_seam_sums(parity_rel_acc *acc, kern_affine_seams *seams, const gdn_shape *s, int64_t device);

/* The subject table: the built-in rows, one row per external output, then
 * the caller's extra rows. */
int parity_sweep_ctx_subjects(input_ctx *x, const parity_external *ext, size_t n_ext, gdn_error *e);
void parity_sweep_ctx_clear(input_ctx *x);
/* A subject's result before its metrics: its identity and dtypes. */
void parity_sweep_meas_init(parity_subject_result *m, const parity_subject_run *s);
/* Identity of the case and its shards. */
void parity_sweep_case_describe(const input_ctx *x, parity_case_result *r);
/* An external output that declares its device count belongs to the case of
 * that count: in every other case of r it is marked other_case and its
 * metrics dropped, so it is judged once (not in every case) and no case
 * draws its seams over an output of another device count. */
void parity_sweep_case_scope(const input_ctx *x, parity_case_result *r);
/* The policy over the case's subject table; each subject's own verdict. */
int parity_sweep_case_judge(const input_ctx *x, parity_case_result *r, gdn_error *e);
/* Whether the candidate records its seam states (bounded memory). */
int parity_sweep_want_seams(const gdn_shape *s, int64_t devices);

#endif
