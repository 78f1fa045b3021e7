/* A test file's scratch folder for Check's checked fixtures (header-only,
 * static: one folder per file that includes it): made fresh before each
 * test (scratch_case_setup), removed with whatever is left in it after the
 * test (scratch_case_teardown), and names joined to it (scratch_case_path:
 * scratch_join's rotating buffers).  tcase_add_checked_fixture(tc,
 * scratch_case_setup, scratch_case_teardown). */
#ifndef GDN_TESTS_SCRATCH_CASE_H
#define GDN_TESTS_SCRATCH_CASE_H

#include <stdlib.h>

#include "scratch_dir.h"

static char *scratch_case_dir;

static inline void scratch_case_setup(void) { scratch_case_dir = scratch_mkdtemp("/tmp/gdn-parity-test"); }

static inline void scratch_case_teardown(void) {
  scratch_rmdir(scratch_case_dir);
  free(scratch_case_dir);
  scratch_case_dir = NULL;
}

static inline const char *scratch_case_path(const char *name) { return scratch_join(scratch_case_dir, name); }

#endif
