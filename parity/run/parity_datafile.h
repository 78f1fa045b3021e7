/* parity_datafile: where a tool finds a default data file (the coverage
 * command's grids/upstream-pr.json) when the user names none.
 *
 * In a checkout the path is relative to the working directory (the
 * repository root), as before.  An installed distribution -- the wheel --
 * ships the file inside its Python package (gdn_parity_jax/grids/...), far
 * from the working directory, so the tool also looks relative to its own
 * executable (/proc/self/exe, symlinks resolved), first match wins:
 *
 *   1. REL in the working directory;
 *   2. EXE_DIR/../gdn_parity_jax/REL      (auditwheel's gdn_parity.scripts/
 *      beside the package in site-packages);
 *   3. EXE_DIR/../lib/python*\/site-packages/gdn_parity_jax/REL  (a venv's or
 *      prefix's bin/; the Python versions in lexical order);
 *   4. EXE_DIR/../../REL                  (a build folder of a checkout:
 *      build/parity/gdn-parity).
 *
 * Only regular files count.  Nothing is allocated.
 */
#ifndef PARITY_DATAFILE_H
#define PARITY_DATAFILE_H

#include <stddef.h>

/* 1 and the path in out (n bytes) when REL was found; 0 otherwise, out then
 * holding the places looked in ("; "-separated, cut at n). */
int parity_datafile_find(const char *rel, char *out, size_t n);

#endif
