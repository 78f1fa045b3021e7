#include "parity_output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdn_atomic.h"
#include "report.h"
#include "report_recur.h"

static int check_one(const char *opt, const char *path, gdn_error *e) {
  if (!path) return GDN_OK;
  size_t n = strlen(path);
  if (n == 0 || path[n - 1] == '/')
    return gdn_error_set(e, GDN_ERR_INPUT, "%s '%s': not a file name", opt, path);
  char *dir = strdup(path);
  if (!dir) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory");
  char *slash = strrchr(dir, '/');
  const char *d = ".";
  if (slash == dir) d = "/";
  else if (slash) {
    *slash = '\0';
    d = dir;
  }
  struct stat st;
  int rc = GDN_OK;
  if (stat(d, &st) != 0)
    rc = errno == ENOTDIR
             ? gdn_error_set(e, GDN_ERR_INPUT, "%s %s: '%s' is not a folder (a part of it is a file)", opt, path, d)
             : gdn_error_set(e, GDN_ERR_INPUT, "%s %s: the folder '%s' does not exist", opt, path, d);
  else if (!S_ISDIR(st.st_mode))
    rc = gdn_error_set(e, GDN_ERR_INPUT, "%s %s: '%s' is not a folder", opt, path, d);
  else if (access(d, W_OK | X_OK) != 0)
    rc = gdn_error_set(e, GDN_ERR_INPUT, "%s %s: the folder '%s' is not writable", opt, path, d);
  else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    rc = gdn_error_set(e, GDN_ERR_INPUT, "%s %s: is a folder", opt, path);
  else {
    /* access() says yes to root on a read-only file system or in /proc: try
     * what the writer will do, a temporary beside the destination. */
    gdn_atomic_file a;
    gdn_error sub;
    gdn_error_init(&sub);
    if (gdn_atomic_open(&a, path, &sub))
      rc = gdn_error_set(e, GDN_ERR_INPUT, "%s %s: %s", opt, path, sub.msg);
    else
      gdn_atomic_abort(&a);
  }
  free(dir);
  return rc;
}

int parity_output_check_paths(const parity_output_opts *o, gdn_error *e) {
  const char *names[4] = {"--json", "--report", "--junit", "--summary"};
  const char *paths[4] = {o->json, o->report, o->junit, o->summary};
  int rc;
  for (int i = 0; i < 4; i++) {
    if ((rc = check_one(names[i], paths[i], e))) return rc;
    for (int j = 0; j < i; j++)
      if (paths[i] && paths[j] && !strcmp(paths[i], paths[j]))
        return gdn_error_set(e, GDN_ERR_INPUT, "%s and %s both write %s", names[j], names[i], paths[i]);
  }
  return GDN_OK;
}

/* The Markdown summary links to the HTML report by a path relative to the
 * summary's own folder. */
static char *relative_link(const char *from_file, const char *to_file) {
  const char *a = strrchr(from_file, '/'), *b = strrchr(to_file, '/');
  size_t da = a ? (size_t)(a - from_file) : 0, db = b ? (size_t)(b - to_file) : 0;
  if (da == db && (da == 0 || !strncmp(from_file, to_file, da))) return strdup(b ? b + 1 : to_file);
  if (to_file[0] == '/') return strdup(to_file);
  if (!a) return strdup(to_file);
  /* Different folders: an absolute path is the only honest link. */
  char *cwd = getcwd(NULL, 0);
  if (!cwd) return strdup(to_file);
  size_t n = strlen(cwd) + strlen(to_file) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", cwd, to_file);
  free(cwd);
  return p;
}

static int write_each(const parity_output_opts *o, const json_t *doc, gdn_error *e) {
  int rc;
  if (report_recur_is(doc)) { /* a recurrence's document: its own writers (report_recur.h) */
    char *link = o->report && o->summary ? relative_link(o->summary, o->report) : NULL;
    if (o->report && o->summary && !link) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory");
    rc = report_recur_write_all(doc, o->json, o->report, o->junit, o->summary, link, e);
    free(link);
    return rc;
  }
  if (o->json && (rc = report_json_write(doc, o->json, e))) return rc;
  if (o->report && (rc = report_html_write(doc, o->report, e))) return rc;
  if (o->junit && (rc = report_junit_write(doc, o->junit, e))) return rc;
  if (o->summary) {
    char *link = o->report ? relative_link(o->summary, o->report) : NULL;
    if (o->report && !link) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory");
    rc = report_markdown_write(doc, o->summary, link, e);
    free(link);
    if (rc) return rc;
  }
  return GDN_OK;
}

/* All outputs as one gdn_atomic set: a failure while writing any of them
 * leaves every destination as it was, so "nothing was written" is true. */
int parity_output_write_all(const parity_output_opts *o, const json_t *doc, gdn_error *e) {
  gdn_atomic_set set;
  gdn_atomic_set_begin(&set);
  int rc = write_each(o, doc, e);
  if (rc) {
    gdn_atomic_set_abort(&set);
    return rc;
  }
  return gdn_atomic_set_commit(&set, e);
}
