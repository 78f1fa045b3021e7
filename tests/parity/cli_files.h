/* Helpers of the CLI tests that work on fixture files (header-only,
 * static): a subcommand run with a file and options, a file copied, two
 * files compared byte for byte, a regen that must succeed, a check writing
 * its JSON.  Every call asserts that it did what was
 * asked, so a test cannot pass on a file that was never written. */
#ifndef CLI_FILES_H
#define CLI_FILES_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../reports/test_util.h"
#include "cli_run.h"

/* prog sub [FILE] args... (NULL-terminated; FILE NULL: none); its result in *r. */
__attribute__((unused)) static void cli_run_sub(cli_result *r, char *prog, const char *sub, const char *file,
                                                const char *const *args) {
  char *av[24];
  int k = 0;
  av[k++] = prog;
  av[k++] = (char *)sub;
  if (file) av[k++] = (char *)file;
  for (int i = 0; args && args[i] && k < 23; i++) av[k++] = (char *)args[i];
  av[k] = NULL;
  cli_run(r, av);
}

__attribute__((unused)) static void cli_copy_file(const char *from, const char *to) {
  size_t n = 0;
  char *d = test_read_file(from, &n);
  ck_assert_ptr_nonnull(d);
  FILE *f = fopen(to, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(d, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
  free(d);
}

__attribute__((unused)) static int cli_same_bytes(const char *a, const char *b) {
  size_t na = 0, nb = 0;
  char *da = test_read_file(a, &na), *db = test_read_file(b, &nb);
  ck_assert(da && db);
  const int same = na == nb && !memcmp(da, db, na);
  free(da);
  free(db);
  return same;
}

/* prog (gdn-fixture) regen FILE args..., which must succeed. */
__attribute__((unused)) static void cli_regen(char *prog, const char *path, const char *const *args) {
  cli_result r;
  cli_run_sub(&r, prog, "regen", path, args);
  ck_assert_msg(r.status == 0, "regen: %s", r.err);
}

/* prog (gdn-parity) check --fixture path --reproducible --threads 2 --json
 * jp [--group-heads group]: its exit status must be want; its stdout then
 * stderr into log (n bytes; NULL: not kept). */
__attribute__((unused)) static void cli_check_json(char *prog, const char *path, const char *group, int want,
                                                   const char *jp, char *log, size_t n) {
  cli_result r;
  const char *args[16] = {"--fixture", path, "--reproducible", "--threads", "2", "--json", jp, NULL};
  if (group) args[7] = "--group-heads", args[8] = group;
  cli_run_sub(&r, prog, "check", NULL, args);
  ck_assert_msg(r.status == want, "check %s: %d %s %s", path, r.status, r.out, r.err);
  if (log) {
    log[0] = '\0';
    strncat(log, r.out, n - 1);
    strncat(log, r.err, n - 1 - strlen(log));
  }
}

#endif
