#include "parity_check_shard.h"

#include <string.h>

#include "gdn_alloc.h"

void parity_shard_plan_init(parity_shard_plan *p) { memset(p, 0, sizeof *p); }

void parity_shard_plan_clear(parity_shard_plan *p) {
  gdn_free(p->run_of);
  parity_shard_plan_init(p);
}

int parity_shard_plan_make(const fix_fixture *fx, int shard_given, kern_shard opt, const char *where,
                           parity_shard_plan *p, gdn_error *e) {
  parity_shard_plan_clear(p);
  /* declared[m]: the first output declaring mode m, or -1 */
  long declared[2] = {-1, -1};
  for (size_t i = 0; i < fx->n_outputs; i++) {
    const char *s = fx->outputs[i].shard;
    if (!s) continue;
    kern_shard m;
    if (kern_shard_parse(s, &m, e))
      return gdn_error_set(e, GDN_ERR_INPUT, "%s: /outputs/%s declares shard '%s', not tokens or chunks", where,
                           fx->outputs[i].name, s);
    if (declared[m] < 0) declared[m] = (long)i;
  }
  const int nd = (declared[0] >= 0) + (declared[1] >= 0);
  const kern_shard undeclared_mode = shard_given ? opt : KERN_SHARD_TOKENS;
  if (nd == 1) {
    const kern_shard m = declared[KERN_SHARD_TOKENS] >= 0 ? KERN_SHARD_TOKENS : KERN_SHARD_CHUNKS;
    if (shard_given && opt != m)
      return gdn_error_set(e, GDN_ERR_INPUT,
                           "%s: --shard %s contradicts /outputs/%s, which declares shard %s (the fixture's "
                           "outputs are judged in the split they were computed with; drop --shard)",
                           where, kern_shard_name(opt), fx->outputs[declared[m]].name, kern_shard_name(m));
  }
  if (fx->n_outputs && !(p->run_of = gdn_calloc(fx->n_outputs, 1, "shard plan", e)))
    return e ? e->code : GDN_ERR_NOMEM;
  if (nd == 0) {
    p->n = 1;
    p->mode[0] = undeclared_mode;
    p->from[0] = shard_given ? "option" : "default";
    return GDN_OK;
  }
  if (nd == 1) {
    p->n = 1;
    p->mode[0] = declared[KERN_SHARD_TOKENS] >= 0 ? KERN_SHARD_TOKENS : KERN_SHARD_CHUNKS;
    p->from[0] = "declared";
    return GDN_OK;
  }
  p->n = 2;
  p->mode[0] = KERN_SHARD_TOKENS;
  p->mode[1] = KERN_SHARD_CHUNKS;
  p->from[0] = p->from[1] = "declared";
  for (size_t i = 0; i < fx->n_outputs; i++) {
    const char *s = fx->outputs[i].shard;
    const kern_shard m = !s ? undeclared_mode : !strcmp(s, "chunks") ? KERN_SHARD_CHUNKS : KERN_SHARD_TOKENS;
    p->run_of[i] = m == KERN_SHARD_CHUNKS;
  }
  return GDN_OK;
}
