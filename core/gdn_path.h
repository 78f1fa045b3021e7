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
 * one file (the second would overwrite the first), and an input that is a
 * folder (named as such, not "not a valid JSON document").  Two inputs may
 * share a file.  An input that does not exist is left for its reader to report.
 */
#ifndef GDN_PATH_H
#define GDN_PATH_H

#include <stddef.h>

#include "gdn_error.h"

typedef struct gdn_path_use {
  const char *role; /* how the user gave it, for messages: "--json", "the fixture" */
  const char *path; /* NULL: not given (skipped) */
  int output;       /* 1: written; 0: read */
} gdn_path_use;

int gdn_path_check_uses(const gdn_path_use *u, size_t n, gdn_error *e);

#endif
