/* parity_grid: synthetic input specifications, from the command line or a
 * grid file (`gdn-parity sweep --grid GRID.json`).
 *
 * A grid file is {"name": ..., "entries": [ENTRY, ...]}; an ENTRY takes
 *   "shape": "B,T,H,D" (required), "key_heads", "dv", "seed", "h0",
 *   "qk_norm" ("in-kernel" | "pre"), "input_dtype" ("float32" | "bfloat16"),
 *   "gates" ("init" | "slow"),
 *   "chunk": [C...], "devices": [D...], "prefix": [NAME...], "dtype",
 *   "matmul_precision", "ftz"
 * and inherits whatever it leaves out from the command line.  Unknown keys
 * and wrong types are errors naming the file, the entry and the key.
 */
#ifndef PARITY_GRID_H
#define PARITY_GRID_H

#include <stddef.h>

#include "gdn_error.h"
#include "gdn_shape.h"
#include "gdn_synth.h"
#include "parity_sweep.h"

typedef struct parity_synth_spec {
  gdn_shape shape;
  int have_shape;
  gdn_synth_opts synth;
  int64_t documents; /* --documents: packed documents per row (gdn_synth_segments); 0/1: one */
  int packing;       /* --packing: GDN_PACKING_LEAK (default) or GDN_PACKING_RESET */
  int grad;          /* --grad / "grad": also judge the gradients */
} parity_synth_spec;

/* --prelude / "prelude": "none" or "bfloat16" (GDN_SYNTH_PRELUDE_BF16). */
int parity_parse_prelude(const char *s, unsigned *flags, const char *where, gdn_error *e);

/* Any argument may be NULL (absent).  shape_str NULL leaves have_shape 0. */
int parity_synth_spec_from_cli(parity_synth_spec *sp, const char *shape_str, const char *key_heads,
                               const char *dv, const char *seed, int h0, const char *qk_norm,
                               const char *input_dtype, const char *gates, gdn_error *e);

typedef struct parity_grid_entry {
  parity_synth_spec spec;
  parity_sweep_opts opts;
} parity_grid_entry;

typedef struct parity_grid {
  size_t n;
  parity_grid_entry *entries;
} parity_grid;

void parity_grid_init(parity_grid *g);
void parity_grid_clear(parity_grid *g);
int parity_grid_load(parity_grid *g, const char *path, const parity_synth_spec *base,
                     const parity_sweep_opts *base_opts, gdn_error *e);
/* The same from JSON text (`source` names it in messages). */
int parity_grid_parse(parity_grid *g, const char *text, const char *source,
                      const parity_synth_spec *base, const parity_sweep_opts *base_opts,
                      gdn_error *e);

/* Whether the policy judges every case of an entry: a dry run of
 * parity_policy_evaluate on the entry's numerics (dtype, matmul, the dtype
 * o is rounded to, with or without an oracle) with placeholder metrics, so
 * an entry the policy has no rule for is refused before any entry runs,
 * not after the earlier ones (GDN_ERR_INPUT, the policy's message). */
int parity_grid_check_policy(const parity_grid_entry *ge, const parity_policy *p, int has_oracle, gdn_error *e);

#endif
