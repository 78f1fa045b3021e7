/* gdn_path: which files a run reads and writes, checked before it starts.
 *
 * Files are compared by identity, not by spelling: an existing file by
 * (st_dev, st_ino) after following symlinks, so "./a.json", "a.json", a
 * hard link and a symlink to it are one file; a file still to be created by
 * realpath(3) of its folder plus its name.  An output is also resolved as
 * gdn_atomic will write it (gdn_atomic_resolve), so a destination gdn_atomic
 * would refuse (a device, a read-only file, a dangling link) is refused here,
 * before any work.
 *
 * Refused (GDN_ERR_INPUT, naming both roles): an output that is one of the
 * inputs (writing it would destroy what is being read), and two outputs on
 * one file (the second would overwrite the first), and an input that is
 * not a regular file (a folder, a FIFO, a device, a socket: named as such;
 * a FIFO would block its reader until some writer comes, a device may never
 * end).  Two inputs may share a file.  An input that does not exist is left
 * for its reader to report.
 *
 * Every reader of an input file opens it through gdn_path_fopen_input (or,
 * where a library opens the file itself -- HDF5, libzip, jansson's
 * json_load_file -- calls gdn_path_check_input first), so the refusal holds
 * for every file input of gdn-parity and gdn-fixture, checked or not.
 */
#ifndef GDN_PATH_H
#define GDN_PATH_H

#include <stddef.h>
#include <stdio.h>

#include "gdn_error.h"

typedef struct gdn_path_use {
  const char *role; /* how the user gave it, for messages: "--json", "the fixture" */
  const char *path; /* NULL: not given (skipped) */
  int output;       /* 1: written; 0: read */
} gdn_path_use;

int gdn_path_check_uses(const gdn_path_use *u, size_t n, gdn_error *e);

/* GDN_ERR_INPUT "ROLE PATH is a FIFO, not a regular file ..." when path
 * exists (links followed) and is not a regular file; GDN_OK otherwise (a
 * missing file is its reader's to report).  role may be NULL. */
int gdn_path_check_input(const char *role, const char *path, gdn_error *e);

/* Opens an input for reading ("rb") without ever blocking on it: opened
 * O_NONBLOCK (a FIFO's open returns at once), then refused unless fstat
 * says a regular file (so a FIFO swapped in after a check is refused too),
 * then made blocking again.  GDN_ERR_INPUT "ROLE PATH: cannot open: why"
 * when it cannot be opened (*errno_out, if not NULL, gets errno: ENOENT
 * lets a caller treat a missing optional file as absent). */
int gdn_path_fopen_input(const char *role, const char *path, FILE **f, int *errno_out, gdn_error *e);

#endif
