/* parity_spill: the scratch files of a run streamed by head group.
 *
 * A streamed run (parity_sweep_stream.h) holds one head group in memory;
 * what a later pass must read again -- the reference, each subject's
 * outputs -- is written here and read back a group at a time.  Each file
 * is created in the scratch folder (TMPDIR, else /tmp) under a unique name
 * and unlinked at once: it lives as long as its
 * descriptor, so nothing is left behind on any exit, signal or crash, and
 * no name in the folder is ever reused or touched.
 *
 * A group-major tensor: group g's slab (its own shape, contiguous) at
 * element offset off[g] = the element counts of the groups before it, held
 * as the values came (float32 or binary64: parity_vals.h; every read is
 * exact, so the metrics of the read-back values are those of the values
 * written).
 */
#ifndef PARITY_SPILL_H
#define PARITY_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_error.h"
#include "parity_vals.h"

typedef struct parity_spill_file {
  int fd; /* -1: none */
  char what[64];
} parity_spill_file;

/* The scratch folder a run writes to: $TMPDIR, else /tmp. */
const char *parity_spill_dir(void);
/* Free bytes in that folder (0 when unknown). */
uint64_t parity_spill_free_bytes(void);

/* The scratch folder takes a file and a byte of data (one made, written and
 * gone with its descriptor), checked before any work: a missing or
 * unwritable TMPDIR is refused at once (GDN_ERR_IO naming the folder), not
 * after the first head group's oracle. */
int parity_spill_check(gdn_error *e);

void parity_spill_file_init(parity_spill_file *f);
int parity_spill_file_open(parity_spill_file *f, const char *what, gdn_error *e);
void parity_spill_file_close(parity_spill_file *f);
int parity_spill_pwrite(parity_spill_file *f, const void *buf, size_t bytes, uint64_t off, gdn_error *e);
int parity_spill_pread(parity_spill_file *f, void *buf, size_t bytes, uint64_t off, gdn_error *e);

typedef struct parity_spill_tensor {
  parity_spill_file f;
  int form;           /* 0: nothing written yet, 1: float32, 2: binary64 */
  int64_t n_groups;
  uint64_t *off;      /* n_groups + 1 element offsets */
} parity_spill_tensor;

void parity_spill_tensor_init(parity_spill_tensor *t);
/* counts[g]: group g's element count.  On failure t is left as
 * parity_spill_tensor_init leaves it (nothing held). */
int parity_spill_tensor_open(parity_spill_tensor *t, const char *what, const int64_t *counts, int64_t n_groups,
                             gdn_error *e);
void parity_spill_tensor_close(parity_spill_tensor *t);
/* Group g's values (float32 or binary64; codes are refused: a streamed run
 * asks for none).  Every group of a tensor in the same form. */
int parity_spill_tensor_write(parity_spill_tensor *t, int64_t g, parity_vals v, gdn_error *e);
/* Group g's values into buf (room for its count as binary64), *v pointing
 * into it in the form written. */
int parity_spill_tensor_read(const parity_spill_tensor *t, int64_t g, void *buf, parity_vals *v, gdn_error *e);

#endif
