/* Corrupt fixtures at the library level: every truncation of a small
 * fixture, single-bit flips all over it, and the reader probe that contains
 * what HDF5 does with them.
 *
 * The property a gate needs: a corrupt file never crashes or hangs the
 * reader and is never read as other numbers.  Every load below either fails
 * with GDN_ERR_INPUT and a message naming the file, or returns a fixture
 * identical in every array and attribute to the intact one (the flip hit a
 * byte nothing reads: padding, free space, a checksum-protected copy HDF5
 * repaired from).  Our writer makes that achievable -- the 1.10 file format
 * checksums every piece of metadata and the chunk index, and Fletcher32
 * every chunk of data (fix_h5.c, fix_write.c) -- and fix_isolate contains
 * the crashes and hangs that HDF5 1.10.8 still has on such bytes. */
#include <hdf5.h>

#include "../fixtures/fixture_testutil.h"
#include "fix_isolate.h"
#include "hostile_util.h"
#include "../check_runner.h"

static unsigned char *make_image(int bf16, size_t *n) {
  const char *p = tu_path(bf16 ? "c_bf16.h5" : "c.h5");
  tu_write_fixture(p, bf16);
  unsigned char *b = tu_read_all(p, n);
  return b;
}

static int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static int same_arr(const void *a, const void *b, size_t bytes) {
  return (!a && !b) || (a && b && !memcmp(a, b, bytes));
}

/* Free-text labels: variable-length strings, which the schema requires,
 * live in HDF5's global heap, and no HDF5 file format checksums that.  A
 * flip there can change a label (well-formed UTF-8 still: the loader refuses
 * the rest), never a number, a shape or a checked name; labels_changed
 * counts those. */
static int labels_changed;

/* Every field of two loaded fixtures, bit for bit; NULL if equal, else what differs. */
static const char *fixture_diff(const fix_fixture *a, const fix_fixture *b) {
  const fix_fixture *la = a, *lb = b;
  int label = !same_str(la->model, lb->model) || !same_str(la->created, lb->created) ||
              !same_str(la->producer, lb->producer) || !same_str(la->notes, lb->notes);
  for (size_t i = 0; i < a->n_outputs && i < b->n_outputs; i++)
    label |= !same_str(a->outputs[i].implementation, b->outputs[i].implementation) ||
             !same_str(a->outputs[i].platform, b->outputs[i].platform);
  labels_changed += label;
  const gdn_inputs *x = &a->inputs, *y = &b->inputs;
  const gdn_shape *s = &x->shape;
  if (memcmp(&x->shape, &y->shape, sizeof *s)) return "shape";
  if (a->version != b->version || a->chunk_size != b->chunk_size || a->has_layer != b->has_layer ||
      a->layer != b->layer)
    return "root integer attributes";
  if (!same_str(a->source, b->source)) return "source";
  if (x->l2norm_in_kernel != y->l2norm_in_kernel || x->has_scale != y->has_scale ||
      memcmp(&x->scale, &y->scale, sizeof x->scale) || x->bf16_mask != y->bf16_mask)
    return "input attributes";
  size_t qk = 4 * gdn_shape_numel_qk(s), v = 4 * gdn_shape_numel_v(s), g = 4 * gdn_shape_numel_gate(s),
         h = 4 * gdn_shape_numel_state(s);
  if (!same_arr(x->q, y->q, qk) || !same_arr(x->k, y->k, qk) || !same_arr(x->v, y->v, v) ||
      !same_arr(x->g, y->g, g) || !same_arr(x->beta, y->beta, g) || !same_arr(x->h0, y->h0, h))
    return "input data";
  if (strcmp(a->inputs_sha256, b->inputs_sha256)) return "inputs_sha256";
  if (a->n_outputs != b->n_outputs) return "number of outputs";
  for (size_t i = 0; i < a->n_outputs; i++) {
    const fix_output *o = &a->outputs[i], *p = &b->outputs[i];
    if (strcmp(o->name, p->name) || o->has_ht != p->has_ht || o->out.dtype != p->out.dtype ||
        o->devices != p->devices || o->missing != p->missing)
      return "output metadata";
    if (!same_str(o->prefix, p->prefix) || !same_str(o->matmul_precision, p->matmul_precision) ||
        !same_str(o->compute_dtype, p->compute_dtype))
      return "output attributes";
    if (!same_arr(o->out.o, p->out.o, 2 * v) || !same_arr(o->out.ht, p->out.ht, 2 * h)) return "output data";
  }
  const fix_oracle *q = &a->oracle, *r = &b->oracle;
  if (q->present != r->present || q->fresh != r->fresh || q->precision_bits != r->precision_bits ||
      q->certified_bits != r->certified_bits || strcmp(q->inputs_sha256, r->inputs_sha256))
    return "oracle attributes";
  if (!same_arr(q->out.o, r->out.o, 2 * v) || !same_arr(q->out.ht, r->out.ht, 2 * h)) return "oracle data";
  if (a->n_warnings != b->n_warnings) return "warnings";
  return NULL;
}

/* Every length from 0 to n - 1, in-process (no probe): HDF5 refuses a
 * truncated file at open (its end-of-file address is past the end), so not
 * one of these may crash the test process, and each must be GDN_ERR_INPUT
 * naming the file. */
START_TEST(every_truncation_is_refused) {
  for (int bf16 = 0; bf16 < 2; bf16++) {
    size_t n;
    unsigned char *img = make_image(bf16, &n);
    ck_assert_uint_gt(n, 1000);
    for (size_t len = 0; len < n; len++) {
      fix_fixture fx;
      fix_fixture_init(&fx);
      gdn_error e;
      gdn_error_init(&e);
      int rc = fix_load_image(&fx, img, len, "cut.h5", NULL, &e);
      ck_assert_msg(rc == GDN_ERR_INPUT, "length %zu of %zu: rc %d (%s)", len, n, rc, e.msg);
      ck_assert_msg(!strncmp(e.msg, "cut.h5: ", 8), "length %zu: message does not start with the file: %s", len,
                    e.msg);
      ck_assert_msg(len < 8 ? strstr(e.msg, "not an HDF5 file") != NULL
                            : strstr(e.msg, "not an HDF5 file") || strstr(e.msg, "truncated or corrupt"),
                    "length %zu: %s", len, e.msg);
      ck_assert_ptr_null(fx.inputs.q);
      fix_fixture_clear(&fx);
    }
    /* and the whole image loads */
    fix_fixture fx;
    fix_fixture_init(&fx);
    gdn_error e;
    gdn_error_init(&e);
    ck_assert_msg(fix_load_image(&fx, img, n, "whole.h5", NULL, &e) == GDN_OK, "%s", e.msg);
    fix_fixture_clear(&fx);
    free(img);
  }
}
END_TEST

/* Single-bit flips: every 8 bits of the first 96 bytes (superblock, the
 * root object header's start) and one bit of every 13th byte after that. */
START_TEST(bit_flips_fail_or_change_nothing) {
  size_t n;
  unsigned char *img = make_image(1, &n);
  fix_load_opts lo;
  fix_load_opts_init(&lo);
  lo.probe_timeout_s = 2; /* the intact image loads in milliseconds */
  fix_fixture ref;
  fix_fixture_init(&ref);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(fix_load_image(&ref, img, n, "flip.h5", &lo, &e) == GDN_OK, "%s", e.msg);
  int refused = 0, unchanged = 0, crashed = 0, hung = 0, stale = 0, checksum = 0;
  for (size_t off = 0; off < n; off += off < 96 ? 1 : 13)
    for (int bit = 0; bit < 8; bit++) {
      if (off >= 96 && bit != (int)(off * 7 % 8)) continue;
      img[off] ^= (unsigned char)(1u << bit);
      fix_fixture fx;
      fix_fixture_init(&fx);
      gdn_error_init(&e);
      int rc = fix_load_image_isolated(&fx, img, n, "flip.h5", &lo, &e);
      img[off] ^= (unsigned char)(1u << bit);
      if (rc) {
        ck_assert_msg(rc == GDN_ERR_INPUT, "byte %zu bit %d: rc %d (%s)", off, bit, rc, e.msg);
        ck_assert_msg(!strncmp(e.msg, "flip.h5: ", 9), "byte %zu bit %d: %s", off, bit, e.msg);
        ck_assert_ptr_null(fx.inputs.q);
        refused++;
        crashed += strstr(e.msg, "crashed") != NULL || strstr(e.msg, "without a verdict") != NULL;
        hung += strstr(e.msg, "did not finish") != NULL;
        stale += strstr(e.msg, "stale") != NULL;
        checksum += strstr(e.msg, "checksum") != NULL;
      } else {
        const char *d = fixture_diff(&ref, &fx);
        ck_assert_msg(d == NULL, "byte %zu bit %d: loaded without an error but %s changed", off, bit, d);
        unchanged++;
      }
      fix_fixture_clear(&fx);
    }
  fprintf(stderr,
          "bit flips over %zu bytes: %d refused (%d HDF5 crashes and %d hangs contained, %d stale oracle, "
          "%d checksum), %d read back with the same numbers (%d of them with a free-text label changed)\n",
          n, refused, crashed, hung, stale, checksum, unchanged, labels_changed);
  ck_assert_int_gt(refused, 100);
  fix_fixture_clear(&ref);
  free(img);
}
END_TEST

static int probe_segv(void *arg, gdn_error *e) {
  (void)arg;
  (void)e;
  raise(SIGSEGV);
  return GDN_OK;
}

static int probe_loop(void *arg, gdn_error *e) {
  (void)e;
  volatile int *stop = arg;
  while (!*stop) {
  }
  return GDN_OK;
}

static int probe_fail(void *arg, gdn_error *e) {
  return gdn_error_set(e, *(int *)arg, "x.h5: /inputs/q: the reason");
}

static int touched;
static int probe_touch(void *arg, gdn_error *e) {
  (void)arg;
  (void)e;
  touched = 1; /* in the child only */
  return GDN_OK;
}

/* The probe itself, with the failures HDF5 has been seen to produce. */
START_TEST(probe_contains_crashes_and_hangs) {
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(fix_isolate_probe("x.h5", probe_segv, NULL, 10, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "x.h5: the HDF5 library crashed") && strstr(e.msg, "signal 11"), "%s", e.msg);
  volatile int stop = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ck_assert_int_eq(fix_isolate_probe("y.h5", probe_loop, (void *)&stop, 0.3, &e), GDN_ERR_INPUT);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  ck_assert_msg(strstr(e.msg, "y.h5: reading the file did not finish within 0 s"), "%s", e.msg);
  ck_assert_msg(el >= 0.3 && el < 5, "timeout took %.2f s", el);
  int code = GDN_ERR_INPUT;
  ck_assert_int_eq(fix_isolate_probe("x.h5", probe_fail, &code, 10, &e), GDN_ERR_INPUT);
  ck_assert_str_eq(e.msg, "x.h5: /inputs/q: the reason");
  code = GDN_ERR_NOMEM; /* an allocation failure in the probe is still exit 3 */
  ck_assert_int_eq(fix_isolate_probe("x.h5", probe_fail, &code, 10, &e), GDN_ERR_NOMEM);
  gdn_error_init(&e);
  ck_assert_int_eq(fix_isolate_probe("x.h5", probe_touch, NULL, 10, &e), GDN_OK);
  ck_assert_int_eq(touched, 0);
  /* no zombie is left behind */
  ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
}
END_TEST

/* The probe costs a second parse, never a different answer: the isolated
 * and the plain loader agree on a valid file and on refusals. */
START_TEST(isolated_load_equals_plain_load) {
  size_t n;
  unsigned char *img = make_image(0, &n);
  fix_fixture a, b;
  fix_fixture_init(&a);
  fix_fixture_init(&b);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(fix_load_image(&a, img, n, "f.h5", NULL, &e), GDN_OK);
  ck_assert_int_eq(fix_load_image_isolated(&b, img, n, "f.h5", NULL, &e), GDN_OK);
  ck_assert_ptr_null(fixture_diff(&a, &b));
  const char *p = tu_path("iso.h5");
  tu_write_all(p, img, n);
  fix_fixture_clear(&b);
  ck_assert_int_eq(fix_load_isolated(&b, p, NULL, &e), GDN_OK);
  ck_assert_ptr_null(fixture_diff(&a, &b));
  ck_assert_int_eq(fix_load_isolated(&b, "/nonexistent/x.h5", NULL, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "/nonexistent/x.h5: cannot open"), "%s", e.msg);
  fix_fixture_clear(&a);
  fix_fixture_clear(&b);
  free(img);
}
END_TEST

static char *corpus; /* fuzz/corpus/fixture */

/* Regression inputs: two single-bit flips of a small fixture that make HDF5
 * 1.10.8 crash (SIGSEGV) and loop forever in-process (found by the bit-flip
 * catalogue; fuzz/corpus/fixture/regress-hdf5-*.h5).  Through the probe
 * they are refusals naming the file. */
START_TEST(known_hdf5_crashers_are_refused) {
  static const char *const names[] = {"regress-hdf5-segv.h5", "regress-hdf5-hang.h5"};
  for (int i = 0; i < 2; i++) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", corpus, names[i]);
    fix_load_opts lo;
    fix_load_opts_init(&lo);
    lo.probe_timeout_s = 2;
    fix_fixture fx;
    fix_fixture_init(&fx);
    gdn_error e;
    gdn_error_init(&e);
    int rc = fix_load_isolated(&fx, p, &lo, &e);
    ck_assert_msg(rc == GDN_ERR_INPUT, "%s: rc %d (%s)", names[i], rc, e.msg);
    ck_assert_msg(strstr(e.msg, p), "%s: %s", names[i], e.msg);
    /* with this HDF5: contained; a fixed HDF5 may refuse it another way */
    fprintf(stderr, "%s: %s\n", names[i], e.msg);
    fix_fixture_clear(&fx);
    /* the group reader of a streamed check, probed the same way */
    fix_group *g = (fix_group *)&fx; /* not NULL: the refusal must clear it */
    gdn_error_init(&e);
    rc = fix_group_open_isolated(&g, p, &lo, &e);
    ck_assert_msg(rc == GDN_ERR_INPUT, "%s: group open rc %d (%s)", names[i], rc, e.msg);
    ck_assert_msg(strstr(e.msg, p), "%s: %s", names[i], e.msg);
    ck_assert_ptr_null(g);
  }
}
END_TEST

/* The group reader probed first opens what the plain one opens: the same
 * metadata and hash on a valid file, the same refusal of a missing one. */
START_TEST(isolated_group_open_equals_plain) {
  size_t n;
  unsigned char *img = make_image(0, &n);
  const char *p = tu_path("iso_group.h5");
  tu_write_all(p, img, n);
  free(img);
  fix_group *a = NULL, *b = NULL;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(fix_group_open(&a, p, NULL, &e), GDN_OK);
  ck_assert_int_eq(fix_group_open_isolated(&b, p, NULL, &e), GDN_OK);
  ck_assert_str_eq(fix_group_meta(a)->inputs_sha256, fix_group_meta(b)->inputs_sha256);
  ck_assert_mem_eq(&fix_group_meta(a)->inputs.shape, &fix_group_meta(b)->inputs.shape, sizeof(gdn_shape));
  fix_fixture sa, sb;
  fix_fixture_init(&sa);
  fix_fixture_init(&sb);
  ck_assert_int_eq(fix_group_read(a, 0, 1, &sa, &e), GDN_OK);
  ck_assert_int_eq(fix_group_read(b, 0, 1, &sb, &e), GDN_OK);
  ck_assert_ptr_null(fixture_diff(&sa, &sb));
  fix_fixture_clear(&sa);
  fix_fixture_clear(&sb);
  fix_group_close(a);
  fix_group_close(b);
  ck_assert_int_eq(fix_group_open_isolated(&b, "/nonexistent/x.h5", NULL, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "/nonexistent/x.h5: cannot open"), "%s", e.msg);
  ck_assert_ptr_null(b);
}
END_TEST

/* A string attribute that is not UTF-8 (a flipped high bit in a label, or
 * a foreign file) is refused, naming the attribute and the byte. */
START_TEST(non_utf8_string_is_refused) {
  const char *p = tu_path("utf8.h5");
  tu_write_fixture(p, 0);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT), g = H5Gopen2(f, "outputs/x", H5P_DEFAULT);
  ck_assert(f >= 0 && g >= 0);
  H5Adelete(g, "platform");
  hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  hid_t a = H5Acreate2(g, "platform", t, sp, H5P_DEFAULT, H5P_DEFAULT);
  const char *bad = "tpu v5\xf0";
  ck_assert_int_ge(H5Awrite(a, t, &bad), 0);
  H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(t);
  H5Gclose(g);
  H5Fclose(f);
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(fix_load(&fx, p, NULL, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "/outputs/x: attribute 'platform' is not valid UTF-8 (byte 6 is 0xf0)"), "%s", e.msg);
  fix_fixture_clear(&fx);
}
END_TEST

/* HDF5's core driver reads a file on disk that has the image's name, if
 * one exists, instead of the image: fix_load_image must load the bytes it
 * was given whatever files exist (it names no real file to HDF5). */
START_TEST(image_is_read_not_a_file_of_its_name) {
  size_t n;
  unsigned char *img = make_image(0, &n);
  char cwd_name[] = "gdn-image-name-XXXXXX";
  int fd = mkstemp(cwd_name);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, "not hdf5", 8), 8);
  close(fd);
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_error e;
  gdn_error_init(&e);
  int rc = fix_load_image(&fx, img, n, cwd_name, NULL, &e);
  unlink(cwd_name);
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(fx.inputs.shape.T, 5);
  fix_fixture_clear(&fx);
  free(img);
}
END_TEST

CKR_MAIN_ARGS("test_corrupt_fixture FUZZ-CORPUS-FIXTURE-DIR", 1, (&corpus), "corrupt_fixture", "corrupt", 900,
    every_truncation_is_refused, bit_flips_fail_or_change_nothing, probe_contains_crashes_and_hangs,
    isolated_load_equals_plain_load, isolated_group_open_equals_plain, known_hdf5_crashers_are_refused, non_utf8_string_is_refused,
    image_is_read_not_a_file_of_its_name)
