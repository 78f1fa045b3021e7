#include "gdn_ocode.h"

#include <stdlib.h>

#include "gdn_alloc.h"

void gdn_ocode_init(gdn_ocode *oc) { memset(oc, 0, sizeof *oc); }

void gdn_ocode_clear(gdn_ocode *oc) {
  gdn_free(oc->c);
  gdn_free(oc->page);
  free(oc->side);
  free(oc->exc); /* grown with realloc under the writers' lock */
  gdn_ocode_init(oc);
}

int gdn_ocode_alloc(gdn_ocode *oc, size_t n, const double *base, gdn_error *e) {
  gdn_ocode_clear(oc);
  if (!(oc->c = gdn_malloc(n ? n : 1, "output o codes", e)) ||
      !(oc->page = gdn_malloc((n / GDN_OCODE_PAGE + 2) * sizeof *oc->page, "output o code pages", e))) {
    gdn_ocode_clear(oc);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  oc->base = base;
  oc->n = n;
  return GDN_OK;
}

void gdn_ocode_restart(gdn_ocode *oc, const double *base) {
  oc->base = base;
  oc->n_exc = oc->n_far = 0;
  oc->nomem = 0;
  free(oc->side);
  oc->side = NULL;
}

/* The list's limit: n / 8 entries (2 bytes per element), at least one
 * growth step. */
static size_t exc_limit(const gdn_ocode *oc) { return oc->n / 8 > 4096 ? oc->n / 8 : 4096; }

/* Under the lock: the entries into the side array (made on first use). */
static void to_side(gdn_ocode *oc, const gdn_ocode_exc *x, size_t k) {
  if (!oc->side && !(oc->side = malloc((oc->n ? oc->n : 1) * sizeof *oc->side))) {
    oc->nomem = 1;
    return;
  }
  for (size_t j = 0; j < k; j++) {
    oc->side[x[j].i] = x[j].v;
    oc->c[x[j].i] = GDN_OCODE_SIDE;
  }
}

void gdn_ocode_flush(gdn_ocode *oc, gdn_ocode_local *loc) {
  if (!loc->n) return;
#pragma omp critical(gdn_ocode_flush)
  {
    if (oc->side || oc->n_exc + loc->n > exc_limit(oc)) {
      to_side(oc, loc->e, loc->n);
    } else {
      if (oc->n_exc + loc->n > oc->cap_exc) {
        size_t cap = oc->cap_exc ? 2 * oc->cap_exc : 4096;
        while (cap < oc->n_exc + loc->n) cap *= 2;
        gdn_ocode_exc *p = realloc(oc->exc, cap * sizeof *p);
        if (p) {
          oc->exc = p;
          oc->cap_exc = cap;
        } else oc->nomem = 1;
      }
      if (oc->n_exc + loc->n <= oc->cap_exc) {
        memcpy(oc->exc + oc->n_exc, loc->e, loc->n * sizeof *loc->e);
        oc->n_exc += loc->n;
      }
    }
  }
  loc->n = 0;
}

static int by_index(const void *a, const void *b) {
  const uint64_t x = ((const gdn_ocode_exc *)a)->i, y = ((const gdn_ocode_exc *)b)->i;
  return (x > y) - (x < y);
}

int gdn_ocode_finish(gdn_ocode *oc, gdn_error *e) {
  if (!oc->c) return GDN_OK;
  if (oc->side) { /* past the limit: the list joins the side array */
    to_side(oc, oc->exc, oc->n_exc);
    free(oc->exc);
    oc->exc = NULL;
    oc->n_exc = oc->cap_exc = 0;
  }
  if (oc->nomem) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory for the output's exception list");
  oc->n_far = oc->n_exc;
  if (oc->side)
    for (size_t i = 0; i < oc->n; i++) oc->n_far += oc->c[i] == GDN_OCODE_SIDE;
  if (oc->n_exc) qsort(oc->exc, oc->n_exc, sizeof *oc->exc, by_index);
  for (size_t k = 1; k < oc->n_exc; k++)
    if (oc->exc[k].i == oc->exc[k - 1].i)
      return gdn_error_set(e, GDN_ERR_INTERNAL, "output element %llu written twice",
                           (unsigned long long)oc->exc[k].i);
  size_t k = 0;
  for (size_t p = 0; p <= oc->n / GDN_OCODE_PAGE + 1; p++) {
    while (k < oc->n_exc && oc->exc[k].i < (uint64_t)p * GDN_OCODE_PAGE) k++;
    oc->page[p] = k;
  }
  return GDN_OK;
}

float gdn_ocode_exc_value(const gdn_ocode *oc, size_t i) {
  const size_t p = i / GDN_OCODE_PAGE;
  size_t lo = oc->page[p], hi = oc->page[p + 1];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (oc->exc[mid].i < i) lo = mid + 1;
    else hi = mid;
  }
  /* Present by construction (finish saw every exception); a missing one
   * would be a caller's bug: NaN makes it loud in every metric. */
  return lo < oc->n_exc && oc->exc[lo].i == i ? oc->exc[lo].v : __builtin_nanf("");
}
