#include "gdn_atomic.h"

#include "gdn_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void gdn_atomic_init(gdn_atomic_file *a) {
  a->f = NULL;
  a->path = NULL;
  a->tmp_path = NULL;
}

static int make_tmp(gdn_atomic_file *a, const char *path, int keep_open, gdn_error *e) {
  gdn_atomic_init(a);
  size_t n = strlen(path);
  a->path = malloc(n + 1);
  a->tmp_path = malloc(n + 16);
  if (!a->path || !a->tmp_path) {
    free(a->path);
    free(a->tmp_path);
    gdn_atomic_init(a);
    return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory preparing to write %s", path);
  }
  memcpy(a->path, path, n + 1);
  /* Same folder as the destination: rename() is then atomic. */
  snprintf(a->tmp_path, n + 16, "%s.tmp.XXXXXX", path);
  /* No signal between creating the temporary and registering it for the
   * cleanup handler (gdn_signal.h): an interrupt then never leaves it. */
  sigset_t old;
  gdn_signal_block(&old);
  int fd = mkstemp(a->tmp_path);
  int reg = fd < 0 ? GDN_OK : gdn_signal_register_temp(a->tmp_path, e);
  gdn_signal_restore(&old);
  if (reg) {
    close(fd);
    unlink(a->tmp_path);
    free(a->path);
    free(a->tmp_path);
    gdn_atomic_init(a);
    return reg;
  }
  if (fd < 0) {
    int err = errno;
    free(a->path);
    free(a->tmp_path);
    gdn_atomic_init(a);
    return gdn_error_set(e, GDN_ERR_IO, "cannot create output %s: %s", path, strerror(err));
  }
  /* mkstemp creates 0600; outputs are ordinary files (umask still applies). */
  mode_t um = umask(0);
  umask(um);
  if (fchmod(fd, 0666 & ~um)) { /* not fatal: the data is what matters */ }
  if (!keep_open) {
    close(fd);
    return GDN_OK;
  }
  a->f = fdopen(fd, "wb");
  if (!a->f) {
    int err = errno;
    close(fd);
    unlink(a->tmp_path);
    gdn_signal_unregister_temp(a->tmp_path);
    free(a->path);
    free(a->tmp_path);
    gdn_atomic_init(a);
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
  gdn_signal_unregister_temp(a->tmp_path);
  free(a->path);
  free(a->tmp_path);
  gdn_atomic_init(a);
}

int gdn_atomic_commit(gdn_atomic_file *a, gdn_error *e) {
  if (!a->tmp_path)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "atomic commit of a file that was never opened");
  int err = 0;
  const char *step = "";
  if (a->f) {
    if (ferror(a->f)) err = EIO, step = "write";
    if (!err && fflush(a->f)) err = errno, step = "flush";
    if (!err && fsync(fileno(a->f))) err = errno, step = "fsync";
    if (fclose(a->f) && !err) err = errno, step = "close";
    a->f = NULL;
  } else {
    int fd = open(a->tmp_path, O_RDONLY);
    if (fd < 0) err = errno, step = "reopen";
    else {
      if (fsync(fd)) err = errno, step = "fsync";
      close(fd);
    }
  }
  if (!err && rename(a->tmp_path, a->path)) err = errno, step = "rename";
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
