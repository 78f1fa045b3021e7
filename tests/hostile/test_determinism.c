/* The same command gives the same bytes: twice in a row, and with
 * --threads 1 and --threads 2 (argv[1] gdn-parity, argv[2] gdn-fixture,
 * argv[3] the shipped fixtures' folder).  Every output of gdn-parity --
 * results JSON, HTML report, JUnit XML, Markdown summary -- for a synthetic
 * run, check --fixture and sweep --grid (with --reproducible, which drops
 * timestamps and timings), and the files gdn-fixture writes (synth, regen,
 * import).  Each run writes into its own folder under the same file names,
 * so the summary's link to the report is the same string. */
#include "hostile_util.h"

static char *parity, *fixture, *data;

static const char *const outs[4] = {"r.json", "r.html", "r.xml", "r.md"};

/* Runs gdn-parity with args + every output into folder `sub`, expecting status 0. */
static void run_into(const char *sub, const char *threads, char *const args[]) {
  const char *d = hu_path(sub);
  mkdir(d, 0755);
  char o[4][800];
  for (int i = 0; i < 4; i++) snprintf(o[i], sizeof o[i], "%s/%s", d, outs[i]);
  char *av[40] = {parity};
  int k = 1;
  for (int i = 0; args[i]; i++) av[k++] = args[i];
  char *fixed[] = {"--threads", (char *)threads, "--reproducible", "--quiet", "--json", o[0], "--report", o[1],
                   "--junit", o[2], "--summary", o[3], NULL};
  for (int i = 0; fixed[i]; i++) av[k++] = fixed[i];
  av[k] = NULL;
  hu_result r;
  hu_run(&r, av, NULL);
  ck_assert_msg(r.status == 0, "%s (threads %s): status %d: %s", args[0], threads, r.status, r.err);
}

static void same_outputs(const char *a, const char *b, const char *what) {
  for (int i = 0; i < 4; i++) {
    char pa[800], pb[800];
    snprintf(pa, sizeof pa, "%s/%s/%s", hu_dir, a, outs[i]);
    snprintf(pb, sizeof pb, "%s/%s/%s", hu_dir, b, outs[i]);
    size_t na, nb;
    unsigned char *x = hu_read(pa, &na), *y = hu_read(pb, &nb);
    ck_assert_msg(x && y && na > 100, "%s: %s missing or empty", what, outs[i]);
    ck_assert_msg(na == nb && !memcmp(x, y, na), "%s: %s differs between %s and %s", what, outs[i], a, b);
    free(x);
    free(y);
  }
}

static void three_runs(char *const args[], const char *what) {
  char a[64], b[64], c[64];
  snprintf(a, sizeof a, "%s-t1", what);
  snprintf(b, sizeof b, "%s-t1-again", what);
  snprintf(c, sizeof c, "%s-t2", what);
  run_into(a, "1", args);
  run_into(b, "1", args);
  run_into(c, "2", args);
  same_outputs(a, b, what);
  same_outputs(a, c, what);
}

START_TEST(synthetic_run) {
  char *args[] = {"--shape", "1,200,2,16", "--key-heads", "1", "--chunk", "16", "--devices", "1,4,5", "--h0", NULL};
  three_runs(args, "run");
}
END_TEST

START_TEST(check_fixture) {
  char f[700];
  snprintf(f, sizeof f, "%s/tiny-b1-t64-hk2-hv2-d16-prenorm.h5", data);
  char *args[] = {"check", "--fixture", f, "--chunk", "16", "--devices", "1,2,4", NULL};
  three_runs(args, "check");
}
END_TEST

START_TEST(sweep_grid) {
  const char *g = hu_path("grid.json");
  static const char grid[] =
      "{\"name\": \"determinism\", \"entries\": [\n"
      " {\"shape\": \"1,100,2,16\", \"devices\": [1, 2, 3], \"shard\": \"chunks\", \"chunk\": [16, 32]},\n"
      " {\"shape\": \"2,70,4,8\", \"key_heads\": 2, \"h0\": true, \"seed\": 5, \"gates\": \"slow\", \"chunk\": 16,"
      "  \"devices\": [1, 5], \"prefix\": [\"sequential\"], \"input_dtype\": \"bfloat16\"}]}\n";
  hu_write(g, grid, sizeof grid - 1);
  char *args[] = {"sweep", "--grid", (char *)g, NULL};
  three_runs(args, "sweep");
}
END_TEST

static unsigned char *file_of(const char *p, size_t *n) {
  unsigned char *b = hu_read(p, n);
  ck_assert_msg(b && *n > 0, "%s missing", p);
  return b;
}

static void expect_same_file(const char *a, const char *b, const char *what) {
  size_t na, nb;
  unsigned char *x = file_of(a, &na), *y = file_of(b, &nb);
  ck_assert_msg(na == nb && !memcmp(x, y, na), "%s: %s and %s differ", what, a, b);
  free(x);
  free(y);
}

/* av run twice, a second apart (no timestamps may reach the file), writing
 * `first` then `second` through av[slot]: the two files byte-identical. */
static void twice_a_second_apart(char *av[], int slot, const char *first, const char *second, const char *what) {
  const char *out[2] = {first, second};
  for (int i = 0; i < 2; i++) {
    if (i) sleep(1);
    av[slot] = (char *)out[i];
    hu_result r;
    hu_run(&r, av, NULL);
    ck_assert_msg(r.status == 0, "%s: %s", what, r.err);
  }
  expect_same_file(first, second, what);
}

/* A .npy file of float32 values (the format numpy writes). */
static void write_npy(const char *p, const int64_t *shape, int nd, float (*f)(size_t)) {
  char hdr[256], dims[128] = "";
  size_t n = 1;
  for (int i = 0; i < nd; i++) {
    char one[32];
    snprintf(one, sizeof one, "%s%lld", i ? ", " : "", (long long)shape[i]);
    strcat(dims, one);
    n *= (size_t)shape[i];
  }
  int hl = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s%s), }", dims, nd == 1 ? "," : "");
  while ((10 + hl + 1) % 64) hdr[hl++] = ' ';
  hdr[hl++] = '\n';
  FILE *fp = fopen(p, "wb");
  ck_assert_ptr_nonnull(fp);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 255), (unsigned char)(hl >> 8)};
  fwrite(pre, 1, 10, fp);
  fwrite(hdr, 1, (size_t)hl, fp);
  for (size_t i = 0; i < n; i++) {
    float v = f(i);
    fwrite(&v, 4, 1, fp);
  }
  fclose(fp);
}
static float f_qk(size_t i) { return (float)((int)(i * 37 % 17) - 8) / 8.0f; }
static float f_v(size_t i) { return (float)((int)(i * 11 % 13) - 6) / 4.0f; }
static float f_g(size_t i) { return -0.01f * (float)(i % 7 + 1); }
static float f_beta(size_t i) { return 0.125f * (float)(i % 9); }

START_TEST(fixture_files) {
  hu_result r;
  /* synth: twice (a second apart: no timestamps in the file) */
  const char *s1 = hu_path("s1.h5"), *s2 = hu_path("s2.h5");
  char *a1[] = {fixture, "synth", "--shape", "1,96,2,16", "--key-heads", "1", "--h0", "--bf16", "q,k", "--chunk-size", "32",
                "--out", NULL, NULL};
  twice_a_second_apart(a1, 12, s1, s2, "synth twice");
  /* regen: twice, and with 1 and 2 threads */
  const char *g1 = hu_path("g1.h5"), *g2 = hu_path("g2.h5"), *g3 = hu_path("g3.h5");
  hu_copy(s1, g1);
  hu_copy(s1, g2);
  hu_copy(s1, g3);
  const char *gs[3] = {g1, g2, g3};
  const char *th[3] = {"1", "1", "2"};
  for (int i = 0; i < 3; i++) {
    char *av[] = {fixture, "regen", (char *)gs[i], "--threads", (char *)th[i], NULL};
    hu_run(&r, av, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
  }
  expect_same_file(g1, g2, "regen twice");
  expect_same_file(g1, g3, "regen with --threads 1 and 2");
  /* regen --force of a file that already has the oracle: the same bytes again */
  char *af[] = {fixture, "regen", (char *)g2, "--force", NULL};
  hu_run(&r, af, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  expect_same_file(g1, g2, "regen --force over its own oracle");
  /* import: twice from the same dumps */
  const char *dumps = hu_path("dumps");
  mkdir(dumps, 0755);
  int64_t qs[4] = {1, 40, 1, 8}, vs[4] = {1, 40, 2, 8}, gsh[3] = {1, 40, 2};
  char p[800];
  snprintf(p, sizeof p, "%s/q.npy", dumps), write_npy(p, qs, 4, f_qk);
  snprintf(p, sizeof p, "%s/k.npy", dumps), write_npy(p, qs, 4, f_v);
  snprintf(p, sizeof p, "%s/v.npy", dumps), write_npy(p, vs, 4, f_v);
  snprintf(p, sizeof p, "%s/g.npy", dumps), write_npy(p, gsh, 3, f_g);
  snprintf(p, sizeof p, "%s/beta.npy", dumps), write_npy(p, gsh, 3, f_beta);
  char *ai[] = {fixture, "import", (char *)dumps, "--source", "cpu-dump", "--chunk-size", "16", "--l2norm-in-kernel", "1",
                "--out", NULL, NULL};
  twice_a_second_apart(ai, 10, hu_path("i1.h5"), hu_path("i2.h5"), "import twice");
}
END_TEST

HU_MAIN("test_determinism GDN-PARITY GDN-FIXTURE DATA-DIR", 3, (&parity, &fixture, &data), "determinism", "determinism", NULL, NULL, 900,
    synthetic_run, check_fixture, sweep_grid, fixture_files)
