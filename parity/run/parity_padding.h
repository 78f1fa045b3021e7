/* parity_padding: what of an external output is judged when documents are
 * packed and rows end in padding.
 *
 * The oracle computes a padding token (segment id 0) with k = v = g = 0:
 * the state passes through it unchanged (gdn_inputs.h).  That is one
 * convention (MaxText zeroes them before its kernel); an implementation that
 * treats padding as one more segment of the raw inputs, or that never
 * computes it, is not wrong: model code masks padding out of the loss.  So a
 * fixture's /outputs/<name> is judged at padding positions only when it
 * declares the oracle's convention (schema v2 attribute padding = "zeroed"),
 * and its ht only as the state it declares:
 *
 *   declared                       o at padding   ht judged as
 *   padding = zeroed               judged         the state after each row's
 *                                                 last token (= the end of its
 *                                                 last document: padding
 *                                                 leaves the state as it was)
 *   final_state = last_document    not judged*    the state at the end of each
 *                                                 row's last document
 *   final_state = per_document     not judged*    each document's own state,
 *                                                 ht (N, Hv, Dk, Dv): recorded
 *                                                 by parity_docstate.h, which
 *                                                 runs after this
 *   neither, no row ends in pad    not judged*    the end of the last document
 *                                                 (it is the row's end)
 *   neither, a row ends in pad     not judged*    not judged: which state the
 *                                                 output holds is unknown
 *
 * (*) unless padding = zeroed is declared too.  "Not judged" at padding
 * positions is done before any measurement: the output's o there is
 * replaced by the reference's, so its error there is exactly 0 under every
 * rule, while the reference (and so every denominator, every other
 * subject) is untouched.  The output's own copy is owned by its
 * parity_external (owned_out); the fixture's stays as stored.  A document's
 * tokens are always judged: an error inside a document still fails.
 *
 * What is recorded, per output, in its attrs: "padding_judged" (whether o
 * at the padding tokens was judged and why) and "final_state_judged" (which
 * state ht was judged as, or why it was not); the log prints both.  Inputs
 * without padding tokens change nothing and record nothing.
 */
#ifndef PARITY_PADDING_H
#define PARITY_PADDING_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "parity_oracle.h"
#include "parity_subject.h"

/* Padding tokens (segment id 0) over all rows; 0 without segment ids. */
int64_t parity_padding_tokens(const gdn_inputs *in);

/* Rows whose last token is padding. */
int64_t parity_padding_rows_ending(const gdn_inputs *in);

/* Applies the table above to each of the n externals (their attrs padding
 * and final_state, as parity_external copies them from the fixture):
 * masks o, clears has_ht, records the attrs.  ref->out.o is the reference
 * the outputs are judged against. */
int parity_padding_apply(const gdn_inputs *in, const parity_reference *ref, parity_external *ext, size_t n,
                         gdn_error *e);

/* parity_padding_apply without masking o (a run streamed by head group
 * masks each group's slab itself: parity_stream_outputs.h): clears has_ht,
 * records the attrs. */
int parity_padding_note(const gdn_inputs *in, parity_external *ext, size_t n, gdn_error *e);

/* Whether x's o is masked at padding tokens (it declares no padding). */
int parity_padding_masks(const parity_external *x);

#endif
