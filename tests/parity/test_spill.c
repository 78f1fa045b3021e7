/* parity_spill: a streamed run's scratch files (anonymous, read back
 * exactly, errors named). */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_runner.h"
#include "parity_spill.h"

/* A fresh folder as TMPDIR (removed by the caller once empty). */
static char *fresh_tmpdir(char buf[64]) {
  snprintf(buf, 64, "/tmp/gdn-spill-test.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(buf));
  ck_assert_int_eq(setenv("TMPDIR", buf, 1), 0);
  return buf;
}

static int entries(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  for (struct dirent *x; (x = readdir(d));) n += strcmp(x->d_name, ".") && strcmp(x->d_name, "..");
  closedir(d);
  return n;
}

/* A file lives only as its descriptor: the folder holds no name while it is
 * open, nor after; what is written at any offset reads back byte for byte. */
START_TEST(anonymous_and_exact) {
  char dir[64];
  fresh_tmpdir(dir);
  ck_assert_str_eq(parity_spill_dir(), dir);
  ck_assert(parity_spill_free_bytes() > 0);
  parity_spill_file f;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_spill_file_open(&f, "test bytes", &e), GDN_OK);
  ck_assert_int_eq(entries(dir), 0);
  double w[100], r[100];
  for (int i = 0; i < 100; i++) w[i] = i * 0.1 - 3.0;
  ck_assert_int_eq(parity_spill_pwrite(&f, w + 50, 50 * sizeof *w, 50 * sizeof *w, &e), GDN_OK); /* the far half first */
  ck_assert_int_eq(parity_spill_pwrite(&f, w, 50 * sizeof *w, 0, &e), GDN_OK);
  ck_assert_int_eq(parity_spill_pread(&f, r, sizeof r, 0, &e), GDN_OK);
  ck_assert_mem_eq(r, w, sizeof w);
  parity_spill_file_close(&f);
  ck_assert_int_eq(f.fd, -1);
  ck_assert_int_eq(entries(dir), 0);
  ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* A group-major tensor: groups written in any order, each read back in the
 * form it was written (float32 or binary64), bit for bit. */
START_TEST(tensor_groups_any_order) {
  char dir[64];
  fresh_tmpdir(dir);
  const int64_t counts[3] = {3, 5, 2};
  float f[10];
  double d[10], buf[10];
  for (int i = 0; i < 10; i++) f[i] = (float)i / 3.0f, d[i] = -i / 7.0;
  parity_spill_tensor tf, td;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_spill_tensor_open(&tf, "test f32", counts, 3, &e), GDN_OK);
  ck_assert_int_eq(parity_spill_tensor_open(&td, "test f64", counts, 3, &e), GDN_OK);
  const int64_t order[3] = {2, 0, 1}, at[3] = {0, 3, 8};
  for (int i = 0; i < 3; i++) {
    const int64_t g = order[i];
    ck_assert_int_eq(parity_spill_tensor_write(&tf, g, parity_vals_f32(f + at[g]), &e), GDN_OK);
    ck_assert_int_eq(parity_spill_tensor_write(&td, g, parity_vals_f64(d + at[g]), &e), GDN_OK);
  }
  for (int64_t g = 0; g < 3; g++) {
    parity_vals v;
    ck_assert_int_eq(parity_spill_tensor_read(&tf, g, buf, &v, &e), GDN_OK);
    ck_assert(v.f && !v.d);
    ck_assert_mem_eq(v.f, f + at[g], (size_t)counts[g] * sizeof *f);
    ck_assert_int_eq(parity_spill_tensor_read(&td, g, buf, &v, &e), GDN_OK);
    ck_assert(v.d && !v.f);
    ck_assert_mem_eq(v.d, d + at[g], (size_t)counts[g] * sizeof *d);
  }
  parity_spill_tensor_close(&tf);
  parity_spill_tensor_close(&td);
  ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* What a tensor refuses, by name: a second form, a group out of range,
 * codes, a read of what was never written. */
START_TEST(tensor_refusals) {
  const int64_t counts[2] = {4, 4};
  float f[4] = {1, 2, 3, 4};
  double d[4] = {1, 2, 3, 4}, buf[4];
  gdn_ocode oc;
  memset(&oc, 0, sizeof oc);
  parity_spill_tensor t;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_spill_tensor_open(&t, "test refusals", counts, 2, &e), GDN_OK);
  parity_vals v;
  ck_assert_int_eq(parity_spill_tensor_read(&t, 0, buf, &v, &e), GDN_ERR_INTERNAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "test refusals: group 0 was not written"));
  ck_assert_int_eq(parity_spill_tensor_write(&t, 0, parity_vals_coded(&oc), &e), GDN_ERR_INTERNAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "held as codes or absent"));
  ck_assert_int_eq(parity_spill_tensor_write(&t, 0, parity_vals_f32(f), &e), GDN_OK); /* control */
  ck_assert_int_eq(parity_spill_tensor_write(&t, 1, parity_vals_f64(d), &e), GDN_ERR_INTERNAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "in another form than the first group"));
  ck_assert_int_eq(parity_spill_tensor_write(&t, 2, parity_vals_f32(f), &e), GDN_ERR_INTERNAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "group 2 out of range"));
  ck_assert_int_eq(parity_spill_tensor_read(&t, -1, buf, &v, &e), GDN_ERR_INTERNAL);
  parity_spill_tensor_close(&t);
}
END_TEST

/* Failures say which scratch file, where, and why: a read past the end, a
 * write to a full device, a scratch folder that does not exist. */
START_TEST(io_errors_named) {
  parity_spill_file f;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(setenv("TMPDIR", "/tmp", 1), 0);
  ck_assert_int_eq(parity_spill_file_open(&f, "test io", &e), GDN_OK);
  char b[16] = "0123456789abcdef", r[16];
  ck_assert_int_eq(parity_spill_pwrite(&f, b, 8, 0, &e), GDN_OK);
  ck_assert_int_eq(parity_spill_pread(&f, r, 8, 0, &e), GDN_OK); /* control: within the file */
  ck_assert_int_eq(parity_spill_pread(&f, r, 16, 0, &e), GDN_ERR_IO);
  ck_assert_ptr_nonnull(strstr(e.msg, "scratch file for test io in /tmp: read failed: short file"));
  parity_spill_file_close(&f);

  int full = open("/dev/full", O_WRONLY);
  ck_assert_int_ge(full, 0);
  parity_spill_file d = {full, "test full"};
  gdn_error_init(&e);
  ck_assert_int_eq(parity_spill_pwrite(&d, b, sizeof b, 0, &e), GDN_ERR_IO);
  ck_assert_ptr_nonnull(strstr(e.msg, "scratch file for test full in /tmp: write failed: "));
  parity_spill_file_close(&d);

  ck_assert_int_eq(setenv("TMPDIR", "/nonexistent-gdn-spill-dir", 1), 0);
  ck_assert_int_eq(parity_spill_file_open(&f, "test missing", &e), GDN_ERR_IO);
  ck_assert_ptr_nonnull(strstr(e.msg, "scratch file for test missing in /nonexistent-gdn-spill-dir: "));
  ck_assert_ptr_nonnull(strstr(e.msg, "set TMPDIR to a writable folder"));
  ck_assert_int_eq(f.fd, -1);
  /* a tensor whose file cannot be made holds nothing, however often it is
   * tried (a streamed run tries again for each group; LeakSanitizer saw the
   * offsets of every try but the last) */
  const int64_t counts[2] = {3, 4};
  parity_spill_tensor t;
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(parity_spill_tensor_open(&t, "test missing tensor", counts, 2, &e), GDN_ERR_IO);
    ck_assert_ptr_null(t.off);
    ck_assert_int_eq(t.f.fd, -1);
  }
}
END_TEST

CKR_MAIN("spill", "spill", 0, anonymous_and_exact, tensor_groups_any_order, tensor_refusals, io_errors_named)
