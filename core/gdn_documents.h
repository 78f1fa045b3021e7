/* gdn_documents: the documents of packed inputs, in row-major order.
 *
 * A document is a maximal run of one nonzero segment id in a row: it
 * starts at t = 0 or where the id is nonzero and differs from token t-1's
 * (gdn_inputs.h's boundary), and ends before the next start or the next
 * padding token (id 0).  Documents are counted row by row, each row's by
 * position: the order flash-linear-attention's cu_seqlens lists the
 * flattened sequences in, so the n-th per-document final state it returns
 * is document n here.  Without segment ids every row is one document.
 * Rows of padding only hold none.  O(B T), no allocation but the list's.
 */
#ifndef GDN_DOCUMENTS_H
#define GDN_DOCUMENTS_H

#include <stdint.h>

#include "gdn_error.h"
#include "gdn_inputs.h"

typedef struct gdn_document {
  int64_t row;   /* b */
  int64_t first; /* its first token */
  int64_t last;  /* its last token (inclusive) */
} gdn_document;

/* The number of documents of in (B without segment ids). */
int64_t gdn_documents_count(const gdn_inputs *in);

/* *docs: the documents in order (gdn_malloc'd, *n of them; NULL when 0). */
int gdn_documents_list(const gdn_inputs *in, gdn_document **docs, int64_t *n, gdn_error *e);

#endif
