#include "parity_datafile.h"

#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int regular(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The folder of this executable (symlinks resolved); 0 when unknown. */
static int exe_dir(char *dir, size_t n) {
  char buf[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (k <= 0) return 0;
  buf[k] = '\0';
  char *slash = strrchr(buf, '/');
  if (!slash) return 0;
  *slash = '\0';
  return snprintf(dir, n, "%s", buf) < (int)n;
}

/* Appends candidate to the list of places looked in; 1 when it is a file
 * (copied to out). */
static int try_path(const char *cand, char *out, size_t n, char *looked, size_t ln) {
  if (regular(cand)) return snprintf(out, n, "%s", cand) < (int)n;
  size_t used = strlen(looked);
  if (used < ln) snprintf(looked + used, ln - used, "%s%s", used ? "; " : "", cand);
  return 0;
}

int parity_datafile_find(const char *rel, char *out, size_t n) {
  char looked[2048] = "", dir[PATH_MAX], cand[PATH_MAX + 512];
  if (try_path(rel, out, n, looked, sizeof looked)) return 1;
  if (rel[0] != '/' && exe_dir(dir, sizeof dir)) {
    snprintf(cand, sizeof cand, "%s/../gdn_parity_jax/%s", dir, rel);
    if (try_path(cand, out, n, looked, sizeof looked)) return 1;
    char pat[PATH_MAX + 512];
    snprintf(pat, sizeof pat, "%s/../lib/python*/site-packages/gdn_parity_jax/%s", dir, rel);
    glob_t g;
    int found = 0;
    if (glob(pat, 0, NULL, &g) == 0) {
      for (size_t i = 0; !found && i < g.gl_pathc; i++) found = try_path(g.gl_pathv[i], out, n, looked, sizeof looked);
      globfree(&g);
    } else {
      try_path(pat, out, n, looked, sizeof looked); /* named in the message as the pattern */
    }
    if (found) return 1;
    snprintf(cand, sizeof cand, "%s/../../%s", dir, rel);
    if (try_path(cand, out, n, looked, sizeof looked)) return 1;
  }
  snprintf(out, n, "%s", looked);
  return 0;
}
