#include "parity_spill.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "gdn_alloc.h"

const char *parity_spill_dir(void) {
  const char *d = getenv("TMPDIR");
  return d && *d ? d : "/tmp";
}

uint64_t parity_spill_free_bytes(void) {
  struct statvfs v;
  if (statvfs(parity_spill_dir(), &v)) return 0;
  return (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
}

int parity_spill_check(gdn_error *e) {
  parity_spill_file f;
  int rc = parity_spill_file_open(&f, "a check of the scratch folder", e);
  if (rc) return rc;
  const char byte = 0; /* a folder that takes a name but no data (a full disk) is refused too */
  rc = parity_spill_pwrite(&f, &byte, 1, 0, e);
  parity_spill_file_close(&f);
  return rc;
}

void parity_spill_file_init(parity_spill_file *f) {
  f->fd = -1;
  f->what[0] = '\0';
}

int parity_spill_file_open(parity_spill_file *f, const char *what, gdn_error *e) {
  parity_spill_file_init(f);
  snprintf(f->what, sizeof f->what, "%s", what);
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/gdn-parity-spill-XXXXXX", parity_spill_dir());
  if (n < 0 || (size_t)n >= sizeof path)
    return gdn_error_set(e, GDN_ERR_INPUT, "scratch folder %s: the path is too long (TMPDIR)", parity_spill_dir());
  int fd = mkstemp(path);
  if (fd < 0)
    return gdn_error_set(e, GDN_ERR_IO, "scratch file for %s in %s: %s (set TMPDIR to a writable folder)", what,
                         parity_spill_dir(), strerror(errno));
  unlink(path); /* anonymous from now on: gone with the descriptor */
  f->fd = fd;
  return GDN_OK;
}

void parity_spill_file_close(parity_spill_file *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
}

/* All of [off, off + bytes) written or read: pwrite and pread may move
 * less than asked, or be interrupted before moving anything. */
static int spill_move(parity_spill_file *f, char *p, size_t bytes, uint64_t off, int writing, gdn_error *e) {
  while (bytes) {
    ssize_t k = writing ? pwrite(f->fd, p, bytes, (off_t)off) : pread(f->fd, p, bytes, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0)
      return gdn_error_set(e, GDN_ERR_IO, "scratch file for %s in %s: %s failed: %s", f->what, parity_spill_dir(),
                           writing ? "write" : "read",
                           k < 0 ? strerror(errno) : writing ? "no space written" : "short file");
    p += k, bytes -= (size_t)k, off += (uint64_t)k;
  }
  return GDN_OK;
}

int parity_spill_pwrite(parity_spill_file *f, const void *buf, size_t bytes, uint64_t off, gdn_error *e) {
  return spill_move(f, (char *)buf, bytes, off, 1, e); /* only read from when writing */
}

int parity_spill_pread(parity_spill_file *f, void *buf, size_t bytes, uint64_t off, gdn_error *e) {
  return spill_move(f, buf, bytes, off, 0, e);
}

void parity_spill_tensor_init(parity_spill_tensor *t) {
  memset(t, 0, sizeof *t);
  parity_spill_file_init(&t->f);
}

int parity_spill_tensor_open(parity_spill_tensor *t, const char *what, const int64_t *counts, int64_t n_groups,
                             gdn_error *e) {
  parity_spill_tensor_init(t);
  t->off = gdn_calloc((size_t)n_groups + 1, sizeof *t->off, "scratch offsets", e);
  if (!t->off) return e ? e->code : GDN_ERR_NOMEM;
  t->n_groups = n_groups;
  for (int64_t g = 0; g < n_groups; g++) t->off[g + 1] = t->off[g] + (uint64_t)counts[g];
  int rc = parity_spill_file_open(&t->f, what, e);
  if (rc) parity_spill_tensor_close(t); /* left as initialised: a later open starts afresh */
  return rc;
}

void parity_spill_tensor_close(parity_spill_tensor *t) {
  parity_spill_file_close(&t->f);
  gdn_free(t->off);
  parity_spill_tensor_init(t);
}

int parity_spill_tensor_write(parity_spill_tensor *t, int64_t g, parity_vals v, gdn_error *e) {
  const int form = v.f ? 1 : v.d ? 2 : 0;
  if (!form || g < 0 || g >= t->n_groups || (t->form && t->form != form))
    return gdn_error_set(e, GDN_ERR_INTERNAL, "scratch for %s: group %" PRId64 " %s", t->f.what, g,
                         !form ? "held as codes or absent (a streamed run holds float32 or binary64)"
                               : "out of range or in another form than the first group");
  t->form = form;
  const size_t es = form == 1 ? sizeof(float) : sizeof(double), n = (size_t)(t->off[g + 1] - t->off[g]);
  return parity_spill_pwrite(&t->f, form == 1 ? (const void *)v.f : (const void *)v.d, n * es, t->off[g] * es, e);
}

int parity_spill_tensor_read(const parity_spill_tensor *t, int64_t g, void *buf, parity_vals *v, gdn_error *e) {
  if (!t->form || g < 0 || g >= t->n_groups)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "scratch for %s: group %" PRId64 " was not written", t->f.what, g);
  const size_t es = t->form == 1 ? sizeof(float) : sizeof(double), n = (size_t)(t->off[g + 1] - t->off[g]);
  parity_spill_file f = t->f;
  int rc = parity_spill_pread(&f, buf, n * es, t->off[g] * es, e);
  *v = t->form == 1 ? parity_vals_f32(buf) : parity_vals_f64(buf);
  return rc;
}
