/* Helpers shared by the tests of reports/: a scratch folder, whole-file
 * reads, and the deterministic sample documents (sample_doc.h). */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh folder under $TMPDIR (or /tmp); the path lives in a static. */
static inline const char *test_tmpdir(void) {
  static char dir[512];
  const char *base = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/gdn-reports-test.XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(1);
  }
  return dir;
}

/* The whole file, NUL-terminated (NULL if it cannot be read); *n its size. */
static inline char *test_read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc((size_t)len + 1);
  if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
    free(p);
    p = NULL;
  }
  fclose(f);
  if (p) p[len] = '\0';
  if (n) *n = (size_t)len;
  return p;
}

/* Number of entries in a folder (excluding . and ..): a failed write must
 * leave no temporary behind. */
static inline int test_count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
  closedir(d);
  return n;
}

static inline void test_write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f || fputs(text, f) < 0 || fclose(f)) {
    perror(path);
    exit(1);
  }
}

#endif
