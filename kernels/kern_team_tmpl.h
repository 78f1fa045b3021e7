/* The working set both chunked kernels (kern_scan_tmpl.h,
 * kern_affine_tmpl.h) give their nt threads: a scratch area of `per`
 * elements each (its kchunk and more), two chunk slots each (the chunk
 * being prepared and the one its body consumes: kern_chunk_tmpl.h's kprep)
 * and the team's flag ring (kern_team.h).  One copy of the allocation and
 * of its size for the memory estimate, so the two cannot disagree.
 * Template: included once per real type, after kern_chunk_tmpl.h. */
#include <stdio.h>

#include "gdn_alloc.h"

typedef struct KR(kteam) {
  kreal *mem;       /* nt scratch areas of `per` elements */
  KR(kprep) *preps; /* 2 per thread */
  uint64_t *slots;  /* the team's flag words (kern_team.h) */
} KR(kteam);

/* Bytes kchunk_team_alloc allocates. */
KTMPL size_t KR(kchunk_team_bytes)(int nt, size_t per) {
  size_t b = kern_size_mul((size_t)nt, kern_size_mul(per, sizeof(kreal)));
  b = kern_size_add(b, kern_size_mul(2 * (size_t)nt, sizeof(KR(kprep))));
  return kern_size_add(b, kern_size_mul(kern_size_mul((size_t)nt, KERN_TEAM_RING(nt)), sizeof(uint64_t)));
}

KTMPL void KR(kchunk_team_free)(KR(kteam) *t) {
  gdn_free(t->slots);
  gdn_free(t->preps);
  gdn_free(t->mem);
  t->mem = NULL, t->preps = NULL, t->slots = NULL;
}

/* All three, zeroed, or none (t all NULL; e names the part that failed
 * after "WHO: "). */
KTMPL int KR(kchunk_team_alloc)(int nt, size_t per, const char *who, KR(kteam) *t, gdn_error *e) {
  char what[3][96];
  snprintf(what[0], sizeof what[0], "%s per-thread scratch", who);
  snprintf(what[1], sizeof what[1], "%s chunk slots", who);
  snprintf(what[2], sizeof what[2], "%s team flags", who);
  t->mem = gdn_calloc((size_t)nt, kern_size_mul(per, sizeof(kreal)), what[0], e);
  t->preps = t->mem ? gdn_calloc(2 * (size_t)nt, sizeof *t->preps, what[1], e) : NULL;
  t->slots = t->preps ? gdn_calloc(kern_size_mul((size_t)nt, KERN_TEAM_RING(nt)), sizeof *t->slots, what[2], e) : NULL;
  if (t->slots) return GDN_OK;
  KR(kchunk_team_free)(t);
  gdn_error_prefix(e, "%s: ", who);
  return GDN_ERR_NOMEM;
}
