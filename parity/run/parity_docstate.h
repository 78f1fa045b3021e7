/* parity_docstate: per-document final states (final_state = per_document).
 *
 * An output that declares final_state per_document stores ht as
 * (N, Hv, Dk, Dv), one state per document in row-major order
 * (gdn_documents.h), as flash-linear-attention's chunk_gated_delta_rule
 * returns its final states with cu_seqlens (its B is 1 and the documents
 * are the flattened sequences, final_state (N, H, K, V)).  Each entry is
 * judged against the oracle's state after that document's last token under
 * the fixture's packing:
 *
 *   reset  the document alone, from h0 of its row when it starts the row
 *          (t = 0), else from zero (gdn_inputs.h: a boundary zeroes the
 *          state).  fla starts sequence n from initial_state[n] (zero when
 *          none is given): our per-row h0 is its row's first document's,
 *          zero for the others.
 *   leak   the row's tokens up to the document's last, from h0: the state
 *          carried across the earlier boundaries.
 *
 * Exactly, at the reference's tier: one oracle run over N rows, row n the
 * tokens above followed by padding (segment id 0, k = v = g = 0: the state
 * passes through unchanged, gdn_inputs.h), so its ht is the N states,
 * binary64-rounded and certified as the reference's ht is (MPFR: every
 * element against p + 64 bits; dd: sampled columns and the running bound).
 * Cost: the oracle over N rows of the longest such slice -- under reset
 * the longest document, under leak up to T -- i.e. up to N/B times the
 * reference's own under leak.
 *
 * Every rule that judges ht then judges the (N, Hv, Dk, Dv) tensor
 * (parity_sweep.c's measure_subject): normwise, per block (one head of one
 * document), per element.  The error model (parity_kappa_model.h) is the
 * model of the same N rows at the case's chunk size, one device (each row
 * chunked from its own start, as fla chunks each cu_seqlens sequence):
 * its ht scale is each document's state's.  The scan-relative rules
 * compare with the stock scan's error on the row-end states.
 */
#ifndef PARITY_DOCSTATE_H
#define PARITY_DOCSTATE_H

#include <stddef.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "kern_config.h"
#include "parity_kappa_model.h"
#include "parity_metrics.h"
#include "parity_oracle.h"
#include "parity_subject.h"

/* 1 when output x declares final_state per_document. */
int parity_docstate_declared(const parity_external *x);

/* When any of the n externals declares per_document: the oracle's
 * per-document states into ref->ht_docs (ref->n_docs of them) at ref's
 * resolved tier and `bits`, and each such output's attrs
 * final_state_judged and note.  GDN_ERR_INPUT when an output's N is not
 * the documents' count (the loader checks it too). */
int parity_docstate_apply(const gdn_inputs *in, parity_reference *ref, int bits, parity_external *ext, size_t n,
                          gdn_error *e);

/* The rows above: row n document n's span, then padding; rows initialised.
 * Their T is the longest span, so a head group's rows (`in` a group's
 * inputs: the same segment ids) are the whole rows' slab of its heads. */
int parity_docstate_rows(const gdn_inputs *in, gdn_inputs *rows, gdn_error *e);

/* The rows' shape alone (only in's segment ids, packing and shape are read). */
int parity_docstate_shape(const gdn_inputs *in, gdn_shape *rows, gdn_error *e);

/* What judging n_outputs outputs' per-document states holds beside a run
 * of in's shape, in output sets of that shape (parity_budget.h's unit:
 * o and ht, binary64), into *sets, rounded up:
 *   the rows: PARITY_DOCSTATE_SETS x the rows' tokens over in's (N x the
 *     longest span / B T): their inputs, their oracle's outputs (o
 *     included) and the error model's float64 scans over them, measured
 *     6.2 of the rows' sets above the same check without such an output
 *     (B 1, T 8192, Hv 4, D 64, 8 documents, packing leak, dd oracle:
 *     +828 MB whole, +390 MB by one key head of two), so 8;
 *   the states, (N, Hv, Dk, Dv) binary64, N Dk / (B (T + Dk)) sets each:
 *     each output's, the oracle's, the model's scales, and a streamed
 *     run's four read buffers (n_outputs + 6 copies), which many short
 *     documents make the larger part. */
#define PARITY_DOCSTATE_SETS 8
int parity_docstate_sets(const gdn_inputs *in, int n_outputs, int *sets, gdn_error *e);

/* The error model of the rows at chunk size `chunk` (cfg: the case's
 * numerics, for the arithmetic's part), m initialised; its s[PARITY_T_HT]
 * is in the per-document layout.  head0: in's first value head in the
 * whole run (0 whole; a head group's own, parity_kappa_model.h). */
int parity_docstate_model(const gdn_inputs *in, int64_t chunk, const kern_config *cfg, int64_t head0,
                          parity_model *m, gdn_error *e);

/* Output x's attrs final_state_judged and note: its n_docs states judged
 * against the oracle's of this tier and certificate; reset: the packing
 * (segment ids under packing reset, else leak). */
int parity_docstate_note(int reset, int64_t n_docs, parity_oracle_tier tier, int certified_bits, parity_external *x,
                         gdn_error *e);

/* The model's statistics of output x's per-document ht against ref's
 * (parity_metrics_model_v), into mt. */
int parity_docstate_model_apply(const parity_model *m, const parity_reference *ref, const parity_external *x,
                                int64_t chunk, parity_metrics *mt, gdn_error *e);

#endif
