#include "gdn_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdn_atomic.h"

typedef struct identity {
  int known;      /* 0: an input that does not exist (its reader says so) */
  int exists;     /* 1: dev/ino; 0: name */
  dev_t dev;
  ino_t ino;
  char name[PATH_MAX + 256]; /* realpath(folder) + "/" + base */
} identity;

/* A file still to be created: its folder's real path plus its own name. */
static int name_of_new(const char *path, identity *id) {
  char dir[PATH_MAX], real[PATH_MAX];
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  size_t dl = slash ? (size_t)(slash - path) : 0;
  if (dl >= sizeof dir) return -1;
  if (slash && dl == 0) dir[0] = '/', dl = 1;
  else if (!slash) dir[0] = '.', dl = 1;
  else memcpy(dir, path, dl);
  dir[dl] = '\0';
  if (!realpath(dir, real)) return -1;
  snprintf(id->name, sizeof id->name, "%s/%s", real, base);
  return 0;
}

static int identify(const gdn_path_use *u, identity *id, gdn_error *e) {
  memset(id, 0, sizeof *id);
  if (u->output) {
    char *target;
    int exists;
    mode_t mode;
    int rc = gdn_atomic_resolve(u->path, &target, &exists, &mode, e);
    if (rc) return gdn_error_prefix(e, "%s: ", u->role);
    free(target);
  }
  struct stat st;
  if (!u->output) {
    int rc = gdn_path_check_input(u->role, u->path, e);
    if (rc) return rc;
  }
  if (stat(u->path, &st) == 0) {
    id->known = id->exists = 1;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    return GDN_OK;
  }
  /* A missing output's folder is checked when its temporary is made. */
  id->known = u->output && name_of_new(u->path, id) == 0;
  return GDN_OK;
}

static int same(const identity *a, const identity *b) {
  if (!a->known || !b->known || a->exists != b->exists) return 0;
  return a->exists ? a->dev == b->dev && a->ino == b->ino : !strcmp(a->name, b->name);
}

int gdn_path_check_uses(const gdn_path_use *u, size_t n, gdn_error *e) {
  identity *id = calloc(n ? n : 1, sizeof *id);
  if (!id) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory");
  int rc = GDN_OK;
  for (size_t i = 0; i < n && !rc; i++) {
    if (!u[i].path) continue;
    if ((rc = identify(&u[i], &id[i], e))) break;
    for (size_t j = 0; j < i && !rc; j++) {
      if (!u[j].path || (!u[i].output && !u[j].output) || !same(&id[i], &id[j])) continue;
      const gdn_path_use *o = u[i].output ? &u[i] : &u[j], *other = o == &u[i] ? &u[j] : &u[i];
      rc = other->output
               ? gdn_error_set(e, GDN_ERR_INPUT, "%s %s and %s %s are the same file: one would overwrite the other",
                               other->role, other->path, o->role, o->path)
               : gdn_error_set(e, GDN_ERR_INPUT,
                               "%s %s is %s %s (the same file): writing it would destroy the input", o->role,
                               o->path, other->role, other->path);
    }
  }
  free(id);
  return rc;
}

static int not_regular(const char *role, const char *path, mode_t m, gdn_error *e) {
  return gdn_error_set(e, GDN_ERR_INPUT, "%s%s%s is %s, not a regular file: an input is read from a file%s",
                       role ? role : "", role ? " " : "", path, gdn_atomic_kind(m),
                       S_ISFIFO(m) ? " (a FIFO would wait for a writer)" : "");
}

int gdn_path_check_input(const char *role, const char *path, gdn_error *e) {
  struct stat st;
  if (!path || stat(path, &st) != 0 || S_ISREG(st.st_mode)) return GDN_OK;
  return not_regular(role, path, st.st_mode, e);
}

int gdn_path_fopen_input(const char *role, const char *path, FILE **f, int *errno_out, gdn_error *e) {
  *f = NULL;
  if (errno_out) *errno_out = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    if (errno_out) *errno_out = err;
    return gdn_error_set(e, GDN_ERR_INPUT, "%s%s%s: cannot open: %s", role ? role : "", role ? " " : "", path,
                         strerror(err));
  }
  struct stat st;
  memset(&st, 0, sizeof st);
  int flags;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int rc = not_regular(role, path, st.st_mode, e);
    close(fd);
    return rc;
  }
  if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 || !(*f = fdopen(fd, "rb"))) {
    int err = errno;
    close(fd);
    return gdn_error_set(e, GDN_ERR_INPUT, "%s%s%s: cannot open: %s", role ? role : "", role ? " " : "", path,
                         strerror(err));
  }
  return GDN_OK;
}
