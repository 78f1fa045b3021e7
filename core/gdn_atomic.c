#include "gdn_atomic.h"

#include "gdn_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The set that commits on this thread stage into (NULL: rename at once). */
static _Thread_local gdn_atomic_set *staging;

void gdn_atomic_init(gdn_atomic_file *a) {
  a->f = NULL;
  a->path = NULL;
  a->target = NULL;
  a->tmp_path = NULL;
}

const char *gdn_atomic_kind(mode_t m) {
  return S_ISDIR(m) ? "a folder" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int gdn_atomic_resolve(const char *path, char **target, int *exists, mode_t *mode, gdn_error *e) {
  struct stat st;
  *target = NULL;
  *exists = 0;
  *mode = 0;
  if (lstat(path, &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR)
      return gdn_error_set(e, GDN_ERR_INPUT, "output %s: %s", path, strerror(errno));
    *target = strdup(path); /* new: the folder is checked when the temporary is made */
    return *target ? GDN_OK : gdn_error_set(e, GDN_ERR_NOMEM, "out of memory");
  }
  if (S_ISLNK(st.st_mode)) {
    /* Written through (gdn_atomic.h says why). */
    char *real = realpath(path, NULL);
    if (!real)
      return gdn_error_set(e, GDN_ERR_INPUT, "output %s: a symbolic link to a missing file (%s); not written",
                           path, strerror(errno));
    if (stat(real, &st) != 0) {
      free(real);
      return gdn_error_set(e, GDN_ERR_INPUT, "output %s: cannot stat its link target", path);
    }
    *target = real;
  } else if (!(*target = strdup(path))) {
    return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory");
  }
  int rc = GDN_OK;
  if (!S_ISREG(st.st_mode))
    rc = gdn_error_set(e, GDN_ERR_INPUT, "output %s is %s, not a regular file; refusing to replace it", path,
                       gdn_atomic_kind(st.st_mode));
  else if (access(*target, W_OK) != 0 || !(st.st_mode & 0222))
    rc = gdn_error_set(e, GDN_ERR_INPUT,
                       "output %s is read-only (mode %04o); not replaced (make it writable or write elsewhere)",
                       path, (unsigned)(st.st_mode & 07777));
  if (rc) {
    free(*target);
    *target = NULL;
    return rc;
  }
  *exists = 1;
  *mode = st.st_mode & 07777;
  return GDN_OK;
}

static void forget(gdn_atomic_file *a) {
  free(a->path);
  free(a->target);
  free(a->tmp_path);
  gdn_atomic_init(a);
}

/* Why the temporary could not be made.  A folder that is missing or closed
 * to us is the user's input (exit 2); anything else is the environment. */
static void tmp_error(const gdn_atomic_file *a, int err, gdn_error *e) {
  char dir[4096];
  const char *slash = strrchr(a->target, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == a->target) snprintf(dir, sizeof dir, "/");
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - a->target), a->target);
  struct stat st;
  int missing = (err == ENOENT || err == ENOTDIR) && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode));
  int closed = err == ENOENT || err == ENOTDIR || err == EACCES || err == EPERM || err == EROFS;
  if (missing)
    gdn_error_set(e, GDN_ERR_INPUT, "cannot create output %s: the folder '%s' does not exist", a->path, dir);
  else
    gdn_error_set(e, closed ? GDN_ERR_INPUT : GDN_ERR_IO, "cannot create output %s: the folder '%s' %s (%s)",
                  a->path, dir, closed ? "is not writable" : "refused a new file", strerror(err));
}

/* Creates and registers the temporary beside a->target; returns its fd. */
static int create_tmp(gdn_atomic_file *a, gdn_error *e) {
  size_t n = strlen(a->target);
  if (!(a->tmp_path = malloc(n + 16))) return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory"), -1;
  snprintf(a->tmp_path, n + 16, "%s.tmp.XXXXXX", a->target);
  /* No signal between creating the temporary and registering it for the
   * cleanup handler (gdn_signal.h): an interrupt then never leaves it. */
  sigset_t old;
  gdn_signal_block(&old);
  int fd = mkstemp(a->tmp_path), err = errno;
  int reg = fd < 0 ? GDN_OK : gdn_signal_register_temp(a->tmp_path, e);
  gdn_signal_restore(&old);
  if (reg) {
    close(fd);
    unlink(a->tmp_path);
    return -1;
  }
  if (fd < 0) tmp_error(a, err, e);
  return fd;
}

static int make_tmp(gdn_atomic_file *a, const char *path, int keep_open, gdn_error *e) {
  gdn_atomic_init(a);
  int exists;
  mode_t mode;
  int rc = gdn_atomic_resolve(path, &a->target, &exists, &mode, e);
  if (rc) return rc;
  if (!(a->path = strdup(path))) {
    forget(a);
    return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory preparing to write %s", path);
  }
  int fd = create_tmp(a, e);
  if (fd < 0) {
    rc = e ? e->code : GDN_ERR_IO;
    forget(a);
    return rc;
  }
  /* mkstemp creates 0600: a replaced file keeps its mode, a new one is an
   * ordinary file (0666 minus the umask). */
  if (!exists) {
    mode_t um = umask(0);
    umask(um);
    mode = 0666 & ~um;
  }
  if (fchmod(fd, mode)) { /* not fatal: the data is what matters */ }
  if (!keep_open) {
    close(fd);
    return GDN_OK;
  }
  if (!(a->f = fdopen(fd, "wb"))) {
    int err = errno;
    close(fd);
    gdn_atomic_abort(a);
    return gdn_error_set(e, GDN_ERR_IO, "cannot open output %s: %s", path, strerror(err));
  }
  return GDN_OK;
}

int gdn_atomic_open(gdn_atomic_file *a, const char *path, gdn_error *e) {
  return make_tmp(a, path, 1, e);
}

int gdn_atomic_open_path(gdn_atomic_file *a, const char *path, gdn_error *e) {
  return make_tmp(a, path, 0, e);
}

/* Called once the temporary is renamed or removed. */
static void release(gdn_atomic_file *a) {
  if (a->tmp_path) gdn_signal_unregister_temp(a->tmp_path);
  forget(a);
}

/* Flush, fsync and close the temporary; errno-style code and the step. */
static int flush_tmp(gdn_atomic_file *a, const char **step) {
  int err = 0;
  if (a->f) {
    if (ferror(a->f)) err = EIO, *step = "write";
    if (!err && fflush(a->f)) err = errno, *step = "flush";
    if (!err && fsync(fileno(a->f))) err = errno, *step = "fsync";
    if (fclose(a->f) && !err) err = errno, *step = "close";
    a->f = NULL;
    return err;
  }
  int fd = open(a->tmp_path, O_RDONLY);
  if (fd < 0) return *step = "reopen", errno;
  if (fsync(fd)) err = errno, *step = "fsync";
  close(fd);
  return err;
}

/* Hands a finished temporary to the staging set (ownership moves). */
static int stage(gdn_atomic_file *a, gdn_error *e) {
  gdn_atomic_set *s = staging;
  if (s->n == GDN_ATOMIC_SET_MAX) {
    gdn_atomic_abort(a);
    return gdn_error_set(e, GDN_ERR_INTERNAL, "more than %d outputs in one set", GDN_ATOMIC_SET_MAX);
  }
  s->path[s->n] = a->path;
  s->target[s->n] = a->target;
  s->tmp[s->n] = a->tmp_path; /* stays registered with gdn_signal until renamed */
  s->n++;
  gdn_atomic_init(a);
  return GDN_OK;
}

int gdn_atomic_commit(gdn_atomic_file *a, gdn_error *e) {
  if (!a->tmp_path)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "atomic commit of a file that was never opened");
  const char *step = "";
  int err = flush_tmp(a, &step);
  if (!err && staging) return stage(a, e);
  if (!err && rename(a->tmp_path, a->target)) err = errno, step = "rename";
  if (err) {
    unlink(a->tmp_path);
    gdn_error_set(e, GDN_ERR_IO, "writing %s failed (%s): %s; nothing was written", a->path, step,
                  strerror(err));
    release(a);
    return GDN_ERR_IO;
  }
  release(a);
  return GDN_OK;
}

void gdn_atomic_abort(gdn_atomic_file *a) {
  if (a->f) fclose(a->f);
  if (a->tmp_path) unlink(a->tmp_path);
  release(a);
}

int gdn_atomic_write_all(const char *path, const void *buf, size_t n, gdn_error *e) {
  gdn_atomic_file a;
  int rc = gdn_atomic_open(&a, path, e);
  if (rc) return rc;
  if (n && fwrite(buf, 1, n, a.f) != n) {
    int err = errno;
    gdn_atomic_abort(&a);
    return gdn_error_set(e, GDN_ERR_IO, "writing %s failed: %s; nothing was written", path,
                         strerror(err ? err : EIO));
  }
  return gdn_atomic_commit(&a, e);
}

void gdn_atomic_set_begin(gdn_atomic_set *s) {
  memset(s, 0, sizeof *s);
  staging = s;
}

static void set_drop(gdn_atomic_set *s, size_t i) {
  unlink(s->tmp[i]);
  gdn_signal_unregister_temp(s->tmp[i]);
  free(s->tmp[i]);
  free(s->path[i]);
  free(s->target[i]);
}

/* "a, b" of s->path[from..to) into buf. */
static void set_list(const gdn_atomic_set *s, size_t from, size_t to, char *buf, size_t cap) {
  buf[0] = '\0';
  for (size_t i = from; i < to; i++) {
    size_t l = strlen(buf);
    snprintf(buf + l, cap - l, "%s%s", i > from ? ", " : "", s->path[i]);
  }
  if (from == to) snprintf(buf, cap, "none");
}

int gdn_atomic_set_commit(gdn_atomic_set *s, gdn_error *e) {
  staging = NULL;
  size_t i = 0;
  int err = 0;
  for (; i < s->n; i++) {
    if (rename(s->tmp[i], s->target[i]) != 0) {
      err = errno;
      break;
    }
    gdn_signal_unregister_temp(s->tmp[i]);
  }
  int rc = GDN_OK;
  if (i < s->n) {
    char done[400], left[400];
    set_list(s, 0, i, done, sizeof done);
    set_list(s, i, s->n, left, sizeof left);
    if (i == 0)
      rc = gdn_error_set(e, GDN_ERR_IO, "writing %s failed (rename): %s; nothing was written", s->path[i],
                         strerror(err));
    else
      rc = gdn_error_set(e, GDN_ERR_IO, "writing %s failed (rename): %s; written: %s; not written: %s", s->path[i],
                         strerror(err), done, left);
  }
  for (size_t j = 0; j < s->n; j++) {
    if (j >= i) {
      set_drop(s, j);
      continue;
    }
    free(s->tmp[j]);
    free(s->path[j]);
    free(s->target[j]);
  }
  s->n = 0;
  return rc;
}

void gdn_atomic_set_abort(gdn_atomic_set *s) {
  staging = NULL;
  for (size_t i = 0; i < s->n; i++) set_drop(s, i);
  s->n = 0;
}
