/* Scratch folders of the tests that run programs (header-only, static):
 * made fresh for a test, walked, and removed with whatever is left in them,
 * so a test that fails midway leaves nothing behind.  The hostile suite's
 * hu_dir (tests/hostile/hostile_util.h) and the parity CLI tests' cli_dir
 * (tests/parity/cli_run.h) are folders of these. */
#ifndef GDN_TESTS_SCRATCH_DIR_H
#define GDN_TESTS_SCRATCH_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh folder "<prefix>-XXXXXX" (malloc'd path); abort()s if it cannot
 * be made (a test that cannot start fails). */
static inline char *scratch_mkdtemp(const char *prefix) {
  char *d = malloc(strlen(prefix) + 8);
  if (d) sprintf(d, "%s-XXXXXX", prefix);
  if (!d || !mkdtemp(d)) {
    perror(prefix);
    abort();
  }
  return d;
}

/* Calls fn(path, name, ctx) for every entry of dir but "." and "..", the
 * path dir/name: one walk for removing, counting and listing. */
typedef void (*scratch_entry_fn)(const char *path, const char *name, void *ctx);
static inline void scratch_each_entry(const char *dir, scratch_entry_fn fn, void *ctx) {
  DIR *d = opendir(dir);
  struct dirent *de;
  char p[4200];
  while (d && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
      /* a path that does not fit is no file the tests made: passed over */
      if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) < (int)sizeof p) fn(p, de->d_name, ctx);
    }
  if (d) closedir(d);
}

static inline void scratch_rmdir(const char *dir);
static inline void scratch_remove_entry(const char *path, const char *name, void *ctx) {
  (void)name, (void)ctx;
  struct stat st;
  if (!lstat(path, &st) && S_ISDIR(st.st_mode)) scratch_rmdir(path);
  else unlink(path);
}

/* dir and everything below it. */
static inline void scratch_rmdir(const char *dir) {
  scratch_each_entry(dir, scratch_remove_entry, NULL);
  rmdir(dir);
}

/* dir/name, in one of 64 rotating buffers: a result stays valid for the
 * next 63 calls, enough for one command line or one test's named files. */
static inline char *scratch_join(const char *dir, const char *name) {
  static char buf[64][700];
  static int k;
  char *b = buf[k++ % 64];
  snprintf(b, sizeof buf[0], "%s/%s", dir, name);
  return b;
}

#endif
