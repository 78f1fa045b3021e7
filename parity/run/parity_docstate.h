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
 * document), per element.  The error model's per-element scale is the
 * row-end state's, so it is not applied to a per-document ht (its rules
 * fall back to their limits without the model), and the scan-relative
 * rules compare with the stock scan's error on the row-end state.
 */
#ifndef PARITY_DOCSTATE_H
#define PARITY_DOCSTATE_H

#include <stddef.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
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

#endif
