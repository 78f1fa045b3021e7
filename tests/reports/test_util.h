/* Helpers shared by the tests of reports/: a scratch folder, whole-file
 * reads, a renderer's text, a writer under every allocation failure (the
 * deterministic sample documents are sample_doc.h's). */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../scratch_dir.h"
#include "gdn_alloc.h"
#include "report_buf.h"

/* The folders test_tmpdir made in this process, removed with what is in
 * them when it exits (a forked test at its end, the runner at the end). */
typedef struct test_tmpdirs_made {
  char dir[16][512];
  int n;
} test_tmpdirs_made;
static inline test_tmpdirs_made *test_tmpdirs(void) {
  static test_tmpdirs_made t;
  return &t;
}
static inline void test_tmpdirs_remove(void) {
  test_tmpdirs_made *t = test_tmpdirs();
  for (int i = 0; i < t->n; i++) scratch_rmdir(t->dir[i]);
  t->n = 0;
}

/* A fresh folder under $TMPDIR (or /tmp), removed at exit; the path lives
 * in a static. */
static inline const char *test_tmpdir(void) {
  static char dir[512];
  const char *base = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/gdn-reports-test.XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(1);
  }
  test_tmpdirs_made *t = test_tmpdirs();
  if (!t->n) atexit(test_tmpdirs_remove);
  if (t->n < 16) snprintf(t->dir[t->n++], sizeof t->dir[0], "%s", dir);
  return dir;
}

/* dir/name, in a static buffer (the next call overwrites it). */
static inline const char *test_path_in(const char *dir, const char *name) {
  static char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
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

/* A renderer: report_html_render, report_json_render, ... */
typedef int (*test_render_fn)(const json_t *doc, report_buf *b, gdn_error *e);

/* fn's text of doc, which must render (its error otherwise); *len its length
 * when len is not NULL.  gdn_malloc'd: release with gdn_free. */
static inline char *test_render(test_render_fn fn, const json_t *doc, size_t *len) {
  report_buf b;
  report_buf_init(&b);
  gdn_error e;
  gdn_error_init(&e);
  int rc = fn(doc, &b, &e);
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  if (len) *len = b.len;
  return b.data;
}

/* A writer: report_html_write, report_json_write, ... (doc into path,
 * atomically). */
typedef int (*test_write_fn)(const json_t *doc, const char *path, gdn_error *e);

/* fn(doc, path) with each of its allocations failing in turn
 * (gdn_alloc_fail_after 1, 2, ... until the write succeeds): every failure
 * is GDN_ERR_NOMEM naming path, and leaves path as it was -- holding `old`,
 * or absent when old is NULL -- and nothing else in dir (no temporary).
 * Returns how many allocations failed; the file is written at the end. */
static inline int test_write_alloc_failures(test_write_fn fn, const json_t *doc, const char *dir, const char *path,
                                            const char *old) {
  gdn_error e;
  gdn_error_init(&e);
  int sites = 0;
  for (long k = 1;; k++) {
    gdn_alloc_fail_after(k);
    int rc = fn(doc, path, &e);
    gdn_alloc_fail_after(0);
    if (rc == GDN_OK) break;
    sites++;
    ck_assert_int_eq(rc, GDN_ERR_NOMEM);
    ck_assert_msg(strstr(e.msg, path) != NULL, "allocation %ld: '%s' does not name %s", k, e.msg, path);
    ck_assert_int_eq(test_count_entries(dir), old ? 1 : 0);
    if (old) {
      char *now = test_read_file(path, NULL);
      ck_assert_str_eq(now, old);
      free(now);
    }
  }
  ck_assert_int_eq(test_count_entries(dir), 1);
  return sites;
}

#endif
