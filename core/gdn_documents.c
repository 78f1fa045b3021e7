#include "gdn_documents.h"

#include "gdn_alloc.h"

/* The documents in order into docs[0..] (NULL: counted only); returns
 * their count. */
static int64_t walk(const gdn_inputs *in, gdn_document *docs) {
  const int64_t B = in->shape.B, T = in->shape.T;
  int64_t n = 0;
  for (int64_t b = 0; b < B; b++) {
    const int32_t *sg = in->seg ? in->seg + b * T : NULL;
    for (int64_t t = 0; t < T; t++) {
      if (sg && sg[t] == 0) continue;
      int64_t u = t;
      while (u + 1 < T && (!sg || sg[u + 1] == sg[t])) u++;
      if (docs) docs[n] = (gdn_document){b, t, u};
      n++;
      t = u;
    }
  }
  return n;
}

int64_t gdn_documents_count(const gdn_inputs *in) { return walk(in, NULL); }

int gdn_documents_list(const gdn_inputs *in, gdn_document **docs, int64_t *n, gdn_error *e) {
  *docs = NULL;
  *n = walk(in, NULL);
  if (!*n) return GDN_OK;
  *docs = gdn_malloc((size_t)*n * sizeof **docs, "the documents' list", e);
  if (!*docs) return GDN_ERR_NOMEM;
  walk(in, *docs);
  return GDN_OK;
}
