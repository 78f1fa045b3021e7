/* gdn_atomic: write an output file so that it either appears whole or not at
 * all.
 *
 * Data goes to a temporary file created (mkstemp) in the destination's own
 * folder, so the final rename(2) is atomic on POSIX file systems; commit
 * flushes, fsyncs, closes and renames, and reports every failure (a full disk
 * shows up at fwrite, fflush, fsync or fclose) with the path and strerror.
 * Abort (or any failed commit) unlinks the temporary: nothing half-written is
 * left behind and an existing file at the destination is untouched.
 * Each temporary is registered with gdn_signal while it exists, so SIGINT,
 * SIGTERM or SIGHUP during a write removes it before the process dies; after
 * SIGKILL a "<path>.tmp.XXXXXX" may remain, and the destination is still
 * intact (only rename(2) ever replaces it).
 */
#ifndef GDN_ATOMIC_H
#define GDN_ATOMIC_H

#include <stdio.h>

#include "gdn_error.h"

typedef struct gdn_atomic_file {
  FILE *f;          /* write here (stdio) */
  char *path;       /* final destination */
  char *tmp_path;   /* the temporary, same folder */
} gdn_atomic_file;

void gdn_atomic_init(gdn_atomic_file *a);
/* Creates the temporary and opens it for writing (GDN_ERR_IO on failure:
 * a missing folder, no permission). */
int gdn_atomic_open(gdn_atomic_file *a, const char *path, gdn_error *e);
/* For writers that need a file name rather than a FILE* (HDF5): creates the
 * temporary and closes it, leaving a->tmp_path for the writer; commit then
 * fsyncs and renames it. */
int gdn_atomic_open_path(gdn_atomic_file *a, const char *path, gdn_error *e);
/* Flush, fsync, close, rename over `path`.  On failure the temporary is
 * removed and the destination is untouched. */
int gdn_atomic_commit(gdn_atomic_file *a, gdn_error *e);
/* Close and remove the temporary; safe after a commit or on an unopened a. */
void gdn_atomic_abort(gdn_atomic_file *a);

/* Convenience: the whole of buf[0..n) to path, atomically. */
int gdn_atomic_write_all(const char *path, const void *buf, size_t n, gdn_error *e);

#endif
