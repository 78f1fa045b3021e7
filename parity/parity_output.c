#include "parity_output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdn_atomic.h"

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
    rc = gdn_error_set(e, GDN_ERR_INPUT, "%s %s: the folder '%s' does not exist", opt, path, d);
  else if (!S_ISDIR(st.st_mode))
    rc = gdn_error_set(e, GDN_ERR_INPUT, "%s %s: '%s' is not a folder", opt, path, d);
  else if (access(d, W_OK | X_OK) != 0)
    rc = gdn_error_set(e, GDN_ERR_INPUT, "%s %s: the folder '%s' is not writable", opt, path, d);
  else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    rc = gdn_error_set(e, GDN_ERR_INPUT, "%s %s: is a folder", opt, path);
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

static int write_json(const char *path, const json_t *doc, gdn_error *e) {
  char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
  if (!text) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory rendering %s", path);
  size_t n = strlen(text);
  text[n] = '\n';
  int rc = gdn_atomic_write_all(path, text, n + 1, e);
  free(text);
  return rc;
}

int parity_output_write_all(const parity_output_opts *o, const json_t *doc, gdn_error *e) {
  int rc;
  if (o->json && (rc = write_json(o->json, doc, e))) return rc;
  if (o->report || o->junit || o->summary)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "--report, --junit and --summary are not wired yet");
  return GDN_OK;
}
