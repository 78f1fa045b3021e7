/* parity_subject: what a case compares, as rows of methods.
 *
 * A subject is one implementation whose outputs a case judges: the stock
 * scan, the affine-prefix kernel, a fixture's /outputs/<name>, later a JAX
 * run on N devices or an MPI rank.  Each kind is one `parity_subject_methods`
 * row: its name, its policy kind (the "subject" selector of a rule), when
 * it is produced (once per input, per chunk size, or per case), its role in
 * the case, and the function that produces its outputs.  The sweep knows no
 * subject by name: it walks the rows.
 *
 * To add a subject: write `produce`, add a row (or pass it to the sweep in
 * parity_sweep_opts.extra), and if it is a new policy kind, add its name to
 * parity_subject_kind_names.  See docs/CONVENTIONS.md.
 */
#ifndef PARITY_SUBJECT_H
#define PARITY_SUBJECT_H

#include <jansson.h>
#include <stddef.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "kern.h"
#include "kern_config.h"
#include "kern_vjp.h"
#include "parity_tensor.h"

/* Policy kinds: bit (1 << index into parity_subject_kind_names). */
enum { PARITY_SUBJ_SCAN = 1u, PARITY_SUBJ_AFFINE = 2u, PARITY_SUBJ_EXTERNAL = 4u };
extern const char *const parity_subject_kind_names[]; /* NULL-terminated */

typedef enum parity_subject_stage {
  PARITY_STAGE_INPUT = 0, /* produced once per input set (given outputs) */
  PARITY_STAGE_CHUNK = 1, /* once per chunk size (the scan ignores D and prefix) */
  PARITY_STAGE_CASE = 2,  /* once per case */
} parity_subject_stage;

typedef enum parity_subject_role {
  PARITY_ROLE_BASELINE = 0,  /* the stock scan: relative and vs-scan rules measure against it */
  PARITY_ROLE_CANDIDATE = 1, /* the kernel under test: upstream checks, profile, seams, ULP histogram */
  PARITY_ROLE_JUDGED = 2,    /* judged on its own: the results record its own verdict */
} parity_subject_role;

/* A fixture's /outputs/<name>: an implementation run to be judged. */
typedef struct parity_external {
  const char *name;
  const gdn_outputs *out;
  int has_ht;
  json_t *attrs;    /* borrowed: copied into each case's impls entry */
  int own_numerics; /* the output declared compute_dtype and matmul_precision */
  gdn_dtype dtype;
  kern_matmul matmul;
  /* parity_packing_match (fixtures with document boundaries): the packing
   * o matches (GDN_PACKING_*, -1 indistinguishable or not measured), and
   * whether that is not the fixture's (then it fails, with the note). */
  int packing_matched;
  int packing_mismatch;
  char packing_note[200];
  /* parity_padding_apply (inputs with padding tokens): the output's own
   * copy with o masked at padding (NULL: none; owned, out points to it)
   * and which state its ht was judged as (empty: no padding). */
  struct gdn_outputs *owned_out;
  char final_note[240];
  /* Schema v3: the output's stored gradients (NULL: none given) and the
   * PARITY_TENSOR_* bits of those stored (dh0 may be absent without h0). */
  const gdn_grads *grads;
  unsigned grads_present;
  /* The device count the output declares (0: none declared): it is judged
   * in the case of that many devices only, once per chunk size and prefix,
   * since its seams are that case's (parity_sweep_case_scope). */
  int64_t devices;
  /* final_state per_document (parity_docstate.h): ht as one state per
   * document, (n_docs, Hv, Dk, Dv) binary64 (NULL: none; has_ht is 0). */
  const double *ht_docs;
  int64_t n_docs;
  int docs_ht; /* final_state per_document with an ht to judge (in ht_docs, or a group at a time streamed) */
} parity_external;

/* What a produce function is given.  cfg: the case's numerics and chunk
 * size; devices and prefix are the case's at PARITY_STAGE_CASE only. */
typedef struct parity_produce_ctx {
  const gdn_inputs *in;
  const kern_config *cfg;
  int want_seams; /* the candidate records the states at device seams */
  const gdn_cotangents *ct; /* --grad: the kernels also produce their
                               gradients for these cotangents; NULL: none */
  const double *code_base;  /* the reference's o (same shape), or NULL: a
                               float32 kernel's o may be held as codes
                               against it (gdn_outputs.h), a quarter of the
                               memory; it must outlive the outputs' reads */
} parity_produce_ctx;

typedef struct parity_subject_methods parity_subject_methods;

/* One subject of an input's case table and what it produced. */
typedef struct parity_subject_run {
  const parity_subject_methods *m;
  const char *name;         /* m->name, or the external output's name */
  int own_numerics;         /* declared compute dtype and matmul mode differ from the case's */
  gdn_dtype dtype;
  kern_matmul matmul;
  const parity_external *ext; /* PARITY_SUBJ_EXTERNAL: the output (borrowed) */
  const void *user;         /* for a row's own use (tests) */
  /* Filled by produce: */
  const gdn_outputs *out;   /* &owned, or borrowed */
  gdn_outputs owned;
  const gdn_grads *grads;   /* &owned_grads (with cotangents), or NULL */
  gdn_grads owned_grads;
  unsigned present;         /* PARITY_TENSOR_* bits produced */
  gdn_dtype out_dtype[PARITY_T_N]; /* the dtype each tensor was rounded to */
  kern_affine_seams seams;  /* the seam states (want_seams) */
  int has_seams;
} parity_subject_run;

struct parity_subject_methods {
  const char *name;  /* the subject's name in every output ("scan") */
  unsigned kind;     /* PARITY_SUBJ_*: which rules apply */
  parity_subject_stage stage;
  parity_subject_role role;
  int vs_scan;       /* also measured against the stock scan (the vs-scan
                        rules, "affine_vs_scan"); never for the baseline */
  int (*produce)(parity_subject_run *s, const parity_produce_ctx *cx, gdn_error *e);
};

extern const parity_subject_methods parity_subject_scan;
extern const parity_subject_methods parity_subject_affine;
extern const parity_subject_methods parity_subject_external;

/* The mutant rows (kern_mutant.h; testing only), row m for catalogued
 * mutant m >= 1: the affine-prefix kernel with that bug switched on, named
 * as the catalogue names it ("carry-zero"), judged on its own (its own
 * verdict in the results) by the affine-prefix rules, against the reference
 * and the stock scan.  Forward only: no backward knows the mutants, so a
 * mutant row never produces gradients.  Rows are built from the catalogue
 * on first use (thread-safe), so a new catalogue row is a new subject row.
 * parity_subject_mutant returns NULL for KERN_MUTANT_NONE or out of range;
 * parity_subject_mutant_of is KERN_MUTANT_NONE for any other row. */
const parity_subject_methods *parity_subject_mutant(kern_mutant m);
kern_mutant parity_subject_mutant_of(const parity_subject_methods *m);

/* Every built-in row, in the order a case lists them (externals follow). */
extern const parity_subject_methods *const parity_subject_rows[];
/* 1 when `name` is one of gdn-parity's own subjects' names (scan,
 * affine-prefix, affine-prefix-mpi): an external output may not take one,
 * or its results would be written over ours (parity_externals_from_fixture
 * refuses it). */
int parity_subject_name_is_own(const char *name);
extern const size_t parity_subject_n_rows;

/* A run bound to row m (name m->name); clear frees what produce made. */
void parity_subject_run_init(parity_subject_run *s, const parity_subject_methods *m);
void parity_subject_run_clear(parity_subject_run *s);
/* Frees what the last produce made; the run keeps its identity (row, name,
 * external, numerics, user) for the next produce. */
void parity_subject_release(parity_subject_run *s);
/* Forgets the last produce's result but keeps its owned output buffers for
 * the next produce to reuse (the kernels overwrite every element): between
 * the cases of a sweep, which produce the same shapes again. */
void parity_subject_park(parity_subject_run *s);
/* Parks what the last produce made, then produces again (released on
 * failure). */
int parity_subject_produce(parity_subject_run *s, const parity_produce_ctx *cx, gdn_error *e);

#endif
