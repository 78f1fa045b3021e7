/* gdn_atomic: the one way an output file is written -- whole or not at all,
 * never over something that is not an output.
 *
 * Destination (gdn_atomic_resolve, done by every open):
 * - A symbolic link is written THROUGH: the data replaces the file the link
 *   names and the link stays.  A fixture linked into a dataset folder must
 *   get its oracle in the real file (replacing the link with a copy would
 *   leave the real file without it).  A dangling link is refused.
 * - Anything that exists and is not a regular file (a device such as
 *   /dev/null, a FIFO, a socket, a folder) is refused: GDN_ERR_INPUT.
 * - An existing read-only file (no write permission for us, or no write bit
 *   at all -- root ignores permissions) is refused: GDN_ERR_INPUT.
 * - A missing or unwritable folder is GDN_ERR_INPUT (the user named it);
 *   failures while writing (full disk) are GDN_ERR_IO.
 * - The new file gets the old file's permission bits (a 0600 fixture stays
 *   0600); a new destination gets 0666 minus the umask.  Hard links to the
 *   old file keep the old bytes (rename(2) gives the name a new inode).
 *
 * Data goes to a temporary created (mkstemp) in the destination's real
 * folder, so the final rename(2) is atomic on POSIX file systems; commit
 * flushes, fsyncs, closes and renames, and reports every failure with the
 * path and strerror.  Abort (or any failed commit) unlinks the temporary.
 * Each temporary is registered with gdn_signal while it exists, so SIGINT,
 * SIGTERM or SIGHUP during a write removes it; after SIGKILL a
 * "<path>.tmp.XXXXXX" may remain, and the destination is still intact.
 *
 * Sets of outputs (gdn_atomic_set): between gdn_atomic_set_begin and
 * gdn_atomic_set_commit, commits on this thread stop short of the rename --
 * every temporary is written and fsynced first, so a full disk while
 * writing any of them leaves every destination old ("nothing was written" is
 * then true).  The set's commit renames them in order; should a rename fail
 * there, the message lists which outputs were written and which were not.
 */
#ifndef GDN_ATOMIC_H
#define GDN_ATOMIC_H

#include <stdio.h>
#include <sys/types.h>

#include "gdn_error.h"

typedef struct gdn_atomic_file {
  FILE *f;          /* write here (stdio) */
  char *path;       /* the destination as the user named it (messages) */
  char *target;     /* what rename replaces: path, or a symlink's target */
  char *tmp_path;   /* the temporary, in target's folder */
} gdn_atomic_file;

/* What a file that is not a regular file is, in words: "a folder",
 * "a FIFO", "a character device", "a block device", "a socket". */
const char *gdn_atomic_kind(mode_t m);

/* What an output path designates: `target` (malloc'd; the caller frees)
 * is path, or the file a symlink path names; *exists says whether target
 * exists, *mode is its permission bits (0 when new).  The refusals listed
 * above are made here. */
int gdn_atomic_resolve(const char *path, char **target, int *exists, mode_t *mode, gdn_error *e);

void gdn_atomic_init(gdn_atomic_file *a);
/* Resolves path and creates the temporary, open for writing. */
int gdn_atomic_open(gdn_atomic_file *a, const char *path, gdn_error *e);
/* For writers that need a file name rather than a FILE* (HDF5): creates the
 * temporary and closes it, leaving a->tmp_path for the writer; commit then
 * fsyncs and renames it. */
int gdn_atomic_open_path(gdn_atomic_file *a, const char *path, gdn_error *e);
/* Flush, fsync, close, rename over the target (or, inside a set, hand the
 * temporary to the set).  On failure the temporary is removed and the
 * destination is untouched. */
int gdn_atomic_commit(gdn_atomic_file *a, gdn_error *e);
/* Close and remove the temporary; safe after a commit or on an unopened a. */
void gdn_atomic_abort(gdn_atomic_file *a);

/* Convenience: the whole of buf[0..n) to path, atomically. */
int gdn_atomic_write_all(const char *path, const void *buf, size_t n, gdn_error *e);

#define GDN_ATOMIC_SET_MAX 16

typedef struct gdn_atomic_set {
  size_t n;
  char *path[GDN_ATOMIC_SET_MAX], *target[GDN_ATOMIC_SET_MAX], *tmp[GDN_ATOMIC_SET_MAX];
} gdn_atomic_set;

/* Starts staging this thread's commits into s (one set at a time). */
void gdn_atomic_set_begin(gdn_atomic_set *s);
/* Renames every staged temporary into place, in the order committed. */
int gdn_atomic_set_commit(gdn_atomic_set *s, gdn_error *e);
/* Removes every staged temporary; nothing of the set is written. */
void gdn_atomic_set_abort(gdn_atomic_set *s);

#endif
