/* The catalogue of bad inputs, through the real commands (argv[1]
 * gdn-parity, argv[2] gdn-fixture, argv[3] failshim.so).  Every case
 * asserts the refusal contract of docs/errors.md: the exit status (2 bad
 * input, 3 environment), an "error:" line naming what and where, the
 * destination byte-identical to before and no "*.tmp.*" left beside it. */
#include <hdf5.h>
#include <math.h>

#include "../fixtures/h5_edit.h"
#include "hostile_util.h"

static char *parity, *fixture, *shim, *corpus;
static char base[512];   /* 1,20,2,16 fixture with h0 and a fresh oracle (2 chunks of 16) */
static char dest[512];   /* a results file that exists before every run */
static const char old_dest[] = "{\"previous\": \"results\"}\n";

static void reset_dest(void) { hu_write(dest, old_dest, sizeof old_dest - 1); }

/* av (with env) run over a freshly reset dest and refused with `status`:
 * the refusal contract, dest keeping its old bytes.  *r for more checks. */
static void refused_keeping_dest(hu_result *r, char *const av[], char *const env[], int status, const char *what,
                                 const char *n1, const char *n2) {
  reset_dest();
  hu_run(r, av, env);
  hu_expect_refusal(r, status, what, n1, n2, hu_dir, dest, (const unsigned char *)old_dest, sizeof old_dest - 1);
}

/* gdn-parity check on f with --json DEST, expected to be refused. */
static void check_refused(const char *f, int status, const char *what, const char *n1, const char *n2) {
  char *av[] = {parity, "check", "--fixture", (char *)f, "--json", dest, "--reproducible", NULL};
  hu_result r;
  refused_keeping_dest(&r, av, NULL, status, what, n1, n2);
  ck_assert_msg(strstr(r.err, f), "%s: message does not name the file: %s", what, r.err);
}

static void setup(void) {
  hu_scratch_make();
  snprintf(base, sizeof base, "%s/base.h5", hu_dir);
  snprintf(dest, sizeof dest, "%s/results.json", hu_dir);
  hu_result r;
  char *a1[] = {fixture, "synth", "--shape", "1,20,2,16", "--h0", "--chunk-size", "16", "--out", base, NULL};
  hu_run(&r, a1, NULL);
  ck_assert_msg(r.status == 0, "synth: %s", r.err);
  char *a2[] = {fixture, "regen", base, "--oracle-bits", "64", NULL};
  hu_run(&r, a2, NULL);
  ck_assert_msg(r.status == 0, "regen: %s", r.err);
}

/* Dataset `name` replaced by a float32 one of the given dims: chunked and
 * never written, so dims may declare far more than the file holds. */
static void replace(const char *p, const char *name, int rank, const hsize_t *dims) {
  hid_t f = h5e_open_rw(p);
  if (H5Lexists(f, name, H5P_DEFAULT) > 0) ck_assert_int_ge(H5Ldelete(f, name, H5P_DEFAULT), 0);
  hid_t s = H5Screate_simple(rank, dims, NULL);
  ck_assert_int_ge(s, 0);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  hsize_t ch[8];
  for (int i = 0; i < rank; i++) ch[i] = 1;
  H5Pset_chunk(dcpl, rank, ch);
  hid_t d = H5Dcreate2(f, name, H5T_IEEE_F32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ck_assert_int_ge(d, 0);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(s);
  H5Fclose(f);
}

/* The inputs of p replaced (replace) by datasets of the given dims: q and k
 * by qk, v, g and beta by gb, h0; a NULL leaves those as they are. */
static void replace_inputs(const char *p, const hsize_t *qk, const hsize_t *v, const hsize_t *gb, const hsize_t *h0) {
  static const struct { const char *name; int rank, which; } rows[] = {
      {"inputs/q", 4, 0}, {"inputs/k", 4, 0}, {"inputs/v", 4, 1}, {"inputs/g", 3, 2}, {"inputs/beta", 3, 2},
      {"inputs/h0", 4, 3}};
  const hsize_t *dims[4] = {qk, v, gb, h0};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (dims[rows[i].which]) replace(p, rows[i].name, rows[i].rank, dims[rows[i].which]);
}

/* NaN, +Inf and -Inf in each input: the message names the dataset, the
 * value and the first bad index; beta outside [0, 2] likewise. */
START_TEST(non_finite_in_each_input) {
  static const char *const names[] = {"q", "k", "v", "g", "beta", "h0"};
  const float vals[] = {NAN, INFINITY, -INFINITY};
  const char *shown[] = {"nan", "inf", "-inf"};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 3; j++) {
      const char *p = hu_scratch_copy(base, "nonfinite.h5");
      char ds[32], what[64], needle[64];
      snprintf(ds, sizeof ds, "inputs/%s", names[i]);
      h5e_poke(p, ds, 7, vals[j]);
      snprintf(what, sizeof what, "%s = %s", names[i], shown[j]);
      snprintf(needle, sizeof needle, "input %s: non-finite value %s at index (", names[i], shown[j]);
      check_refused(p, 2, what, needle, "(flat index 7)");
      /* gdn-fixture reads it with the same loader: same refusal */
      char *av[] = {fixture, "verify", (char *)p, NULL};
      hu_result r;
      hu_run(&r, av, NULL);
      hu_expect_refusal(&r, 2, what, needle, p, hu_dir, NULL, NULL, 0);
    }
  const char *p = hu_scratch_copy(base, "beta.h5");
  h5e_poke(p, "inputs/beta", 3, 2.5f);
  check_refused(p, 2, "beta 2.5", "input beta: value 2.5 at index (b=0, t=1, h=1) is outside [0, 2]", NULL);
}
END_TEST

/* Shapes: arrays that disagree, Hv not a multiple of Hk, T = 0, products
 * that overflow 64 bits, and shapes beyond --max-bytes -- refused from the
 * metadata, before anything is allocated (the declared sizes here are
 * exabytes in a file of a few kilobytes). */
START_TEST(shapes_refused_by_metadata) {
  const char *p = hu_scratch_copy(base, "k_t21.h5");
  hsize_t k21[4] = {1, 21, 2, 16};
  replace(p, "inputs/k", 4, k21);
  check_refused(p, 2, "k with T = 21", "/inputs/k: shape (1, 21, 2, 16) disagrees", "axis 1 (T, from q) is 21, not 20");
  p = hu_scratch_copy(base, "hv3.h5");
  hsize_t v3[4] = {1, 20, 3, 16}, g3[3] = {1, 20, 3}, h3[4] = {1, 3, 16, 16};
  replace_inputs(p, NULL, v3, g3, h3);
  check_refused(p, 2, "Hv = 3, Hk = 2", "/inputs/v: Hv = 3 value heads is not a multiple of the Hk = 2 key heads", NULL);
  p = hu_scratch_copy(base, "t0.h5");
  hsize_t q0[4] = {1, 0, 2, 16}, v0[4] = {1, 0, 2, 16}, g0[3] = {1, 0, 2};
  replace_inputs(p, q0, v0, g0, NULL);
  check_refused(p, 2, "T = 0", "T (sequence length) is 0; it must be at least 1", NULL);
  /* 2^31 * 2^31 * 2 * 2^31 elements: more than 2^64 */
  p = hu_scratch_copy(base, "overflow.h5");
  hsize_t big[4] = {(hsize_t)1 << 31, (hsize_t)1 << 31, 2, (hsize_t)1 << 31}, bg[3] = {(hsize_t)1 << 31, (hsize_t)1 << 31, 2},
          bh[4] = {(hsize_t)1 << 31, 2, (hsize_t)1 << 31, (hsize_t)1 << 31};
  hid_t s = H5Screate_simple(4, big, NULL);
  if (s >= 0) { /* HDF5 itself may refuse such a dataspace; then there is nothing to test */
    H5Sclose(s);
    replace_inputs(p, big, big, bg, bh);
    check_refused(p, 2, "element count over 2^64", "overflows 64 bits", NULL);
  }
  /* 1 x 2^30 tokens of a Qwen layer: 64 TiB declared, refused by the default limit */
  p = hu_scratch_copy(base, "huge.h5");
  hsize_t hq[4] = {1, (hsize_t)1 << 30, 16, 128}, hv[4] = {1, (hsize_t)1 << 30, 32, 128}, hg[3] = {1, (hsize_t)1 << 30, 32},
          hh[4] = {1, 32, 128, 128};
  replace_inputs(p, hq, hv, hg, hh);
  hid_t f = h5e_open_rw(p); /* the oracle would disagree first */
  ck_assert_int_ge(H5Ldelete(f, "oracle", H5P_DEFAULT), 0);
  H5Fclose(f);
  check_refused(p, 2, "64 TiB declared", "more than the limit", "--max-bytes");
  /* and the real base with a limit below its size */
  char *av[] = {parity, "check", "--fixture", base, "--max-bytes", "1K", "--json", dest, NULL};
  hu_result r;
  refused_keeping_dest(&r, av, NULL, 2, "--max-bytes 1K", "more than the limit of", base);
}
END_TEST

/* The same rules on the command line: gdn-parity and gdn-fixture synth. */
START_TEST(shapes_refused_on_the_command_line) {
  static const struct { const char *args[8]; const char *n1; } t[] = {
      {{"--shape", "1,0,4,8"}, "T (sequence length)) must be at least 1"},
      {{"--shape", "1,64,3,8", "--key-heads", "2"}, "key heads 2 do not divide the 3 value heads"},
      {{"--shape", "4294967296,4294967296,4294967296,2"}, "element count overflows 64 bits"},
      {{"--shape", "1,99999999999999999999,1,1"}, "field 2 (T (sequence length)) is too large"},
      {{"--shape", "1,1048576,32,128", "--max-bytes", "1G"}, "more than the limit of 1 GiB"},
      {{"--shape", "1,64,1,8", "--chunk", "32", "--devices", "4", "--shard", "chunks"},
       "more than the 2 chunks"},
      {{"--shape", "1,64,1,8", "--devices", "3"}, "the nearest valid T is 63"},
      {{"--shape", "1,64,1,8", "--chunk", "64", "--devices", "2", "--shard", "chunks"},
       "more than the 1 chunk"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char *av[12] = {parity};
    int k = 1;
    for (int j = 0; j < 8 && t[i].args[j]; j++) av[k++] = (char *)t[i].args[j];
    av[k++] = "--json";
    av[k++] = dest;
    av[k] = NULL;
    hu_result r;
    refused_keeping_dest(&r, av, NULL, 2, t[i].args[1], "gdn-parity: error: ", t[i].n1);
  }
  /* D larger than the chunk count of a fixture (T = 20, C = 16: 2 chunks) */
  char *av[] = {parity, "check", "--fixture", base, "--devices", "3", "--shard", "chunks",
                "--json", dest, NULL};
  hu_result r;
  refused_keeping_dest(&r, av, NULL, 2, "check --devices 3", base, "more than the 2 chunks");
  /* gdn-fixture synth: same shape rules, no file written */
  const char *out = hu_path("synth.h5");
  static const char *const shapes[][4] = {{"1,0,1,4", NULL}, {"1,8,3,4", "--key-heads", "2", NULL},
                                          {"4294967296,4294967296,4294967296,2", NULL}};
  static const char *const why[] = {"must be at least 1", "not a multiple of Hk", "overflows 64 bits"};
  for (int i = 0; i < 3; i++) {
    char *a2[12] = {fixture, "synth", "--shape", (char *)shapes[i][0]};
    int k = 4;
    for (int j = 1; j < 4 && shapes[i][j]; j++) a2[k++] = (char *)shapes[i][j];
    a2[k++] = "--out";
    a2[k++] = (char *)out;
    a2[k] = NULL;
    hu_run(&r, a2, NULL);
    hu_expect_refusal(&r, 2, shapes[i][0], "gdn-fixture synth: error: ", why[i], hu_dir, out, NULL, 0);
  }
}
END_TEST

/* Destinations that cannot be written: refused before any work (exit 2, in
 * well under the time a case takes), nothing created. */
START_TEST(unwritable_destinations) {
  static const char *const opts[] = {"--json", "--report", "--junit", "--summary"};
  const char *missing = hu_path("no-such-folder/out.file");
  char under_file[600];
  reset_dest();
  snprintf(under_file, sizeof under_file, "%s/results.json/out.file", hu_dir); /* dest is a file */
  const char *bad[][2] = {{missing, "does not exist"},
                          {under_file, "is not a folder"},
                          {hu_dir, "is a folder"},
                          {"/proc/gdn-out.file", "is not writable"}};
  for (int o = 0; o < 4; o++)
    for (int b = 0; b < 4; b++) {
      char *av[] = {parity, "--shape", "1,64,1,8", "--chunk", "16", (char *)opts[o], (char *)bad[b][0], NULL};
      hu_result r;
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      hu_run(&r, av, NULL);
      clock_gettime(CLOCK_MONOTONIC, &t1);
      char what[700];
      snprintf(what, sizeof what, "%s %s", opts[o], bad[b][0]);
      hu_expect_refusal(&r, 2, what, opts[o], bad[b][1], hu_dir, NULL, NULL, 0);
      ck_assert_msg(strstr(r.err, bad[b][0]), "%s: message does not name the path: %s", what, r.err);
      ck_assert_msg(t1.tv_sec - t0.tv_sec < 20, "%s: refused only after the work", what);
    }
  ck_assert_int_ne(access(missing, F_OK), 0);
  /* report: rebuilding into a missing folder */
  const char *res = hu_path("res.json");
  char *a0[] = {parity, "--shape", "1,64,1,8", "--chunk", "16", "--json", (char *)res, "--quiet", NULL};
  hu_result r;
  hu_run(&r, a0, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  char *a1[] = {parity, "report", (char *)res, "-o", (char *)missing, NULL};
  hu_run(&r, a1, NULL);
  hu_expect_refusal(&r, 2, "report -o missing", "does not exist", missing, hu_dir, missing, NULL, 0);
  /* gdn-fixture: --out in a missing folder is the user's input: exit 2, as
   * documented (catalogue row 16 in docs/errors.md; it was 3). */
  char *a2[] = {fixture, "synth", "--shape", "1,4,1,4", "--out", (char *)missing, NULL};
  hu_run(&r, a2, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, missing) && strstr(r.err, "does not exist"),
                "synth into a missing folder: %d %s", r.status, r.err);
}
END_TEST

static char preload[700];
static char *shim_env(const char *fail_or_kill, const char *v) {
  static char buf[4][200];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, 200, "%s=%s", fail_or_kill, v);
  return b;
}

/* A full disk: writes that fail with EFBIG (RLIMIT_FSIZE: the kernel's own
 * refusal) and with ENOSPC at write, fsync or rename (failshim).  Exit 3,
 * the message names the destination and the reason, the destination keeps
 * its old bytes, no temporary remains. */
START_TEST(full_disk) {
  snprintf(preload, sizeof preload, "LD_PRELOAD=%s", shim);
  /* ASan wants to be first in the library list; the shim needs no checks. */
  char *asan = "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:verify_asan_link_order=0";
  static const char *const opts[] = {"--json", "--report", "--junit", "--summary"};
  static const char *const events[] = {"write", "fsync", "rename"};
  for (int o = 0; o < 4; o++)
    for (int ev = 0; ev < 3; ev++) {
      char *env[] = {preload, asan, shim_env("GDN_SHIM_FAIL", events[ev]), NULL};
      char *av[] = {parity, "--shape", "1,64,1,8", "--chunk", "16", (char *)opts[o], dest, "--quiet", NULL};
      char what[100];
      snprintf(what, sizeof what, "%s, ENOSPC at %s", opts[o], events[ev]);
      hu_result r;
      refused_keeping_dest(&r, av, env, 3, what, dest, "No space left on device");
      ck_assert_msg(strstr(r.err, "nothing was written"), "%s: %s", what, r.err);
    }
  /* the fixture writers: synth over an existing file, regen in place */
  size_t bn;
  unsigned char *bb = hu_read(base, &bn);
  for (int ev = 0; ev < 3; ev++) {
    char *env[] = {preload, asan, shim_env("GDN_SHIM_FAIL", events[ev]), NULL};
    char *a1[] = {fixture, "synth", "--shape", "1,4,1,4", "--force", "--out", base, NULL};
    hu_result r;
    hu_run(&r, a1, env);
    hu_expect_refusal(&r, 3, events[ev], base, "No space left on device", hu_dir, base, bb, bn);
    char *a2[] = {fixture, "regen", base, "--force", "--oracle-bits", "64", NULL};
    hu_run(&r, a2, env);
    hu_expect_refusal(&r, 3, events[ev], base, "No space left on device", hu_dir, base, bb, bn);
  }
  /* RLIMIT_FSIZE of 4 KiB (SIGXFSZ ignored, so the write fails with EFBIG) */
  char *sh = "/bin/sh";
  char script[] = "trap '' XFSZ; ulimit -f 4; exec \"$@\"";
  char *a3[] = {sh, "-c", script, "sh", parity, "--shape", "1,64,1,8", "--chunk", "16", "--report", dest, "--quiet", NULL};
  hu_result r;
  refused_keeping_dest(&r, a3, NULL, 3, "--report under ulimit -f 4", dest, "File too large");
  char *a4[] = {sh, "-c", script, "sh", fixture, "regen", base, "--force", "--oracle-bits", "64", NULL};
  hu_run(&r, a4, NULL);
  hu_expect_refusal(&r, 3, "regen under ulimit -f 4", base, "File too large", hu_dir, base, bb, bn);
  free(bb);
}
END_TEST

extern void __asan_init(void) __attribute__((weak));

/* Out of memory: an address-space limit below what the inputs need, with
 * --max-bytes 0 (no limit of ours): the allocation fails, exit 3, the
 * message says what could not be allocated.  (Not under ASan, whose shadow
 * memory needs terabytes of address space.) */
START_TEST(out_of_memory_is_exit_3) {
  if (&__asan_init) return;
  char script[] = "ulimit -v 1000000; exec \"$@\"";
  char *a[] = {"/bin/sh", "-c", script, "sh", parity, "--shape", "1,2000000,4,32", "--max-bytes", "0", "--oracle", "none",
               "--json", dest, NULL};
  hu_result r;
  refused_keeping_dest(&r, a, NULL, 3, "ulimit -v 1 GB", "out of memory", NULL);
}
END_TEST

/* Corrupt files through the gate: truncations and bit flips of a fixture,
 * judged by gdn-parity check.  Never a signal, never a hang (each run is
 * given 120 s), and never a verdict on other data: a run that does not
 * refuse (exit 2) must produce exactly the intact file's results. */
START_TEST(corrupt_fixtures_through_the_gate) {
  size_t n;
  unsigned char *img = hu_read(base, &n);
  const char *f = hu_path("corrupt.h5");
  const char *good = hu_path("good.json");
  hu_write(f, img, n);
  char *av[] = {parity, "check", "--fixture", (char *)f, "--json", dest, "--reproducible", "--quiet", NULL};
  hu_result r;
  hu_run(&r, av, NULL);
  ck_assert_msg(r.status == 0, "intact fixture: %d %s", r.status, r.err);
  hu_copy(dest, good);
  size_t gn;
  unsigned char *gb = hu_read(good, &gn);
  size_t cuts[] = {0, 1, 7, 8, 9, 511, 512, 1024, 2048, n / 3, n / 2, n - 100, n - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    hu_write(f, img, cuts[i]);
    char what[64];
    snprintf(what, sizeof what, "truncated to %zu of %zu bytes", cuts[i], n);
    check_refused(f, 2, what, cuts[i] < 8 ? "not an HDF5 file" : "truncated or corrupt", NULL);
  }
  int refused = 0, same = 0;
  for (size_t off = 5; off < n; off += n / 40) {
    img[off] ^= 0x10;
    hu_write(f, img, n);
    img[off] ^= 0x10;
    reset_dest();
    hu_run_ex(&r, av, NULL, 0, 0, 120);
    ck_assert_msg(!r.timed_out, "byte %zu flipped: gdn-parity hung", off);
    ck_assert_msg(r.status == 0 || r.status == 1 || r.status == 2, "byte %zu flipped: status %d: %s", off, r.status,
                  r.err);
    if (r.status == 2) {
      refused++;
      ck_assert_msg(strstr(r.err, f), "byte %zu: message does not name the file: %s", off, r.err);
      ck_assert_msg(hu_same(dest, (const unsigned char *)old_dest, sizeof old_dest - 1), "byte %zu: results written", off);
    } else {
      same++;
      ck_assert_msg(r.status == 0 && hu_same(dest, gb, gn), "byte %zu flipped: status %d and different results", off,
                    r.status);
    }
    ck_assert_int_eq(hu_temps(hu_dir, NULL, 0), 0);
  }
  fprintf(stderr, "gate on flipped fixtures: %d refused, %d judged exactly as the intact file\n", refused, same);
  free(gb);
  free(img);
}
END_TEST

/* A fixture one flipped bit away from crashing HDF5 1.10.8 (SIGSEGV
 * in-process; fuzz/corpus/fixture/regress-hdf5-segv.h5): every command
 * refuses it with exit 2 and leaves it and the destination untouched. */
START_TEST(hdf5_crasher_through_every_command) {
  char src[1024];
  snprintf(src, sizeof src, "%s/regress-hdf5-segv.h5", corpus);
  const char *f = hu_path("crasher.h5");
  hu_copy(src, f);
  size_t n;
  unsigned char *b = hu_read(f, &n);
  check_refused(f, 2, "check on an HDF5 crasher", "refused, nothing from it was used", NULL);
  /* the head-group reader of a streamed check is probed too (it crashed,
   * signal 11, before it was) */
  reset_dest();
  char *sv[] = {parity, "check", "--fixture", (char *)f, "--group-heads", "1", "--json", dest, NULL};
  hu_result sr;
  hu_run(&sr, sv, NULL);
  hu_expect_refusal(&sr, 2, "streamed check on an HDF5 crasher", f, "refused, nothing from it was used", hu_dir, dest,
                    (const unsigned char *)old_dest, sizeof old_dest - 1);
  static const char *const cmds[] = {"verify", "info", "regen"};
  for (int i = 0; i < 3; i++) {
    char *av[] = {fixture, (char *)cmds[i], (char *)f, NULL};
    hu_result r;
    hu_run(&r, av, NULL);
    hu_expect_refusal(&r, 2, cmds[i], f, "refused, nothing from it was used", hu_dir, f, b, n);
  }
  free(b);
}
END_TEST

HU_MAIN("test_hostile_cli GDN-PARITY GDN-FIXTURE FAILSHIM.so FUZZ-CORPUS-FIXTURE-DIR", 4, (&parity, &fixture, &shim, &corpus), "hostile_cli", "cli", setup, NULL, 600,
    non_finite_in_each_input, shapes_refused_by_metadata, shapes_refused_on_the_command_line, unwritable_destinations,
    full_disk, out_of_memory_is_exit_3, corrupt_fixtures_through_the_gate, hdf5_crasher_through_every_command)
