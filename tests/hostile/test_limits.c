/* Never exceed the promised memory (docs/errors.md, catalogue of the hostile
 * tests, rows 7-10): every size that scales a buffer is counted against
 * --max-bytes before anything is allocated, and threads are capped at the
 * work (argv[1] gdn-parity, argv[2] gdn-fixture).  Each refusal has its
 * negative control: the same run within the limit succeeds. */
#include <hdf5.h>
#include <sys/resource.h>
#include <zip.h>

#include "hostile_util.h"

static char *parity, *fixture;

static void set_root_int(const char *file, const char *name, long long v) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
  ck_assert_int_ge(f, 0);
  hid_t a = H5Aopen(f, name, H5P_DEFAULT);
  ck_assert_int_ge(a, 0);
  int64_t x = v;
  ck_assert_int_ge(H5Awrite(a, H5T_NATIVE_INT64, &x), 0);
  H5Aclose(a);
  H5Fclose(f);
}

/* Row 7: chunk scratch grows with C^2; it is counted (was: 1.9 GB under
 * --max-bytes 1M), and a fixture's chunk_size is bounded like --chunk.  The
 * limit is 2M: the metrics' own working memory (about 1.1 MB on one thread,
 * parity_metrics_scratch_bytes) is counted too, so 1M refuses even chunk 16
 * (metrics_scratch_counted). */
START_TEST(chunk_scratch_counted) {
  hu_result r;
  char *a1[] = {parity, "--shape", "1,64,1,8", "--chunk", "4096", "--max-bytes", "2M", "--oracle", "dd", NULL};
  hu_run(&r, a1, NULL);
  hu_expect_refusal(&r, 2, "--chunk 4096 --max-bytes 2M", "kernel scratch", "chunk size 4096", hu_dir, NULL, NULL, 0);
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  /* refused before the scratch: the child stayed small (it asked 1.9 GB) */
  ck_assert_msg(ru.ru_maxrss < 200 * 1024, "peak RSS %ld KB", ru.ru_maxrss);
  /* negative control: a chunk that fits runs under the same limit */
  char *c1[] = {parity, "--shape", "1,64,1,8", "--chunk", "16", "--max-bytes", "2M", "--oracle", "dd", "--quiet", NULL};
  hu_run(&r, c1, NULL);
  ck_assert_msg(r.status == 0, "control: %s", r.err);
  /* a fixture declaring chunk_size 2^31: verify refuses it (was: passed,
   * then check exit 3 "allocating 18446744073709551615 bytes") */
  const char *fx = hu_path("c.h5");
  char *a2[] = {fixture, "synth", "--shape", "1,32,1,8", "--chunk-size", "16", "--out", (char *)fx, NULL};
  hu_run(&r, a2, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  char *v[] = {fixture, "verify", (char *)fx, NULL};
  hu_run(&r, v, NULL);
  ck_assert_msg(r.status == 0, "control verify: %s", r.err);
  set_root_int(fx, "chunk_size", 1LL << 31);
  hu_run(&r, v, NULL);
  hu_expect_refusal(&r, 2, "verify chunk_size 2^31", "chunk_size is 2147483648", "[1, 1048576]", hu_dir, NULL, NULL, 0);
  char *chk[] = {parity, "check", (char *)fx, "--oracle", "dd", NULL};
  hu_run(&r, chk, NULL);
  hu_expect_refusal(&r, 2, "check chunk_size 2^31", "chunk_size", fx, hu_dir, NULL, NULL, 0);
  /* the largest chunk_size synth accepts is still judged with exit 2, not 3 */
  char *a3[] = {fixture, "synth", "--shape", "1,32,1,8", "--chunk-size", "1048577", "--force", "--out", (char *)fx, NULL};
  hu_run(&r, a3, NULL);
  hu_expect_refusal(&r, 2, "synth --chunk-size 2^20+1", "--chunk-size '1048577'", "[1, 1048576]", hu_dir, NULL, NULL, 0);
  char *a4[] = {fixture, "synth", "--shape", "1,32,1,8", "--chunk-size", "1048576", "--force", "--out", (char *)fx, NULL};
  hu_run(&r, a4, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  hu_run(&r, chk, NULL);
  hu_expect_refusal(&r, 2, "check chunk_size 2^20", "kernel scratch", fx, hu_dir, NULL, NULL, 0);
}
END_TEST

/* The metrics' working memory is counted and named as such (not blamed on
 * the chunk size): 1M is below it for any shape; 2M (the control above)
 * is not. */
START_TEST(metrics_scratch_counted) {
  hu_result r;
  char *a1[] = {parity, "--shape", "1,64,1,8", "--chunk", "16", "--max-bytes", "1M", "--oracle", "dd", NULL};
  hu_run(&r, a1, NULL);
  hu_expect_refusal(&r, 2, "--max-bytes 1M", "working memory for the metrics", "--max-bytes 1048576", hu_dir, NULL,
                    NULL, 0);
  ck_assert_msg(!strstr(r.err, "smaller --chunk"), "blames the chunk: %s", r.err);
}
END_TEST

/* Row 8: --threads 4096 on one head takes what the work needs (was 19 s,
 * 3.7 GB), and a thread that cannot be created is exit 3 with a message
 * (was libgomp's exit 1, a tolerance failure's status).  Stacks of 500 GB
 * (OMP_STACKSIZE) make every thread creation fail. */
START_TEST(threads_capped_and_failure_reported) {
  hu_result r;
  char *a1[] = {parity, "--shape", "1,128,2,8", "--threads", "4096", "--oracle", "dd", "--quiet", NULL};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  hu_run(&r, a1, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(t1.tv_sec - t0.tv_sec < 10, "--threads 4096 took %ld s", (long)(t1.tv_sec - t0.tv_sec));
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  /* 30 MB here; under ASan 221 MB (its ~18 MB a worker thread, 8 threads for this work) */
  const long cap_kb = (CKR_UNDER_ASAN ? 400 : 200) * 1024;
  ck_assert_msg(ru.ru_maxrss < cap_kb, "--threads 4096: peak RSS %ld KB (cap %ld KB)", ru.ru_maxrss, cap_kb);
  char *env[] = {"OMP_STACKSIZE=500G", NULL};
  /* one item of work (1 head, Dv 1, one chunk): no thread is started */
  char *c1[] = {parity, "--shape", "1,16,1,1", "--chunk", "16", "--devices", "1", "--threads", "64", "--oracle",
                "dd", "--quiet", NULL};
  hu_run(&r, c1, env);
  ck_assert_msg(r.status == 0, "1 item, --threads 64: %d %s", r.status, r.err);
  /* two heads: a thread is needed and cannot be made */
  char *a2[] = {parity, "--shape", "1,16,2,1", "--chunk", "16", "--devices", "1", "--threads", "64", "--oracle",
                "dd", "--quiet", NULL};
  hu_run(&r, a2, env);
  hu_expect_refusal(&r, 3, "thread creation fails", "ended by a library", "fewer --threads", hu_dir, NULL, NULL, 0);
  /* negative control: the same run with one thread */
  char *c2[] = {parity, "--shape", "1,16,2,1", "--chunk", "16", "--devices", "1", "--threads", "1", "--oracle",
                "dd", "--quiet", NULL};
  hu_run(&r, c2, env);
  ck_assert_msg(r.status == 0, "--threads 1: %d %s", r.status, r.err);
}
END_TEST

/* A float32 .npy of zeros of `shape` (rank 3 or 4) as an archive member. */
static void add_zeros(zip_t *z, const char *name, const int64_t *shape, int rank) {
  size_t size;
  unsigned char *b = hu_npy_zeros(shape, rank, &size);
  zip_source_t *s = zip_source_buffer(z, b, size, 1);
  ck_assert_ptr_nonnull(s);
  zip_int64_t i = zip_file_add(z, name, s, ZIP_FL_OVERWRITE);
  ck_assert_int_ge(i, 0);
  zip_set_file_compression(z, (zip_uint64_t)i, ZIP_CM_DEFLATE, 9);
}

/* Row 9: the members of one .npz count against one budget, before each is
 * allocated (was: each member alone, the total only after reading). */
START_TEST(npz_members_share_the_budget) {
  const char *npz = hu_path("dump.npz");
  int err;
  zip_t *z = zip_open(npz, ZIP_CREATE | ZIP_TRUNCATE, &err);
  ck_assert_ptr_nonnull(z);
  const int64_t qk[4] = {1, 3072, 4, 256}, gb[3] = {1, 3072, 4};
  add_zeros(z, "q.npy", qk, 4);
  add_zeros(z, "k.npy", qk, 4);
  add_zeros(z, "v.npy", qk, 4);
  add_zeros(z, "g.npy", gb, 3);
  add_zeros(z, "beta.npy", gb, 3);
  ck_assert_int_eq(zip_close(z), 0);
  struct stat st;
  ck_assert(stat(npz, &st) == 0 && st.st_size < 200000); /* 36 MB of zeros, compressed */
  const char *desc = hu_path("d.json");
  static const char d[] = "{\"inputs\": \"dump.npz\", \"source\": \"cpu-dump\", \"chunk_size\": 64, "
                          "\"l2norm_in_kernel\": 1}";
  hu_write(desc, d, sizeof d - 1);
  const char *out = hu_path("o.h5");
  hu_result r;
  /* each 12 MB member is within 32M alone; q (twice 12 MB while decoding)
   * leaves 20 MB, so k is refused before it is allocated */
  char *a1[] = {fixture, "import", "--describe", (char *)desc, "--out", (char *)out, "--max-bytes", "32M", NULL};
  hu_run(&r, a1, NULL);
  hu_expect_refusal(&r, 2, "npz over the shared budget", "dump.npz:k", "left of the limit", hu_dir, out, NULL, 0);
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  ck_assert_msg(ru.ru_maxrss < 120 * 1024, "peak RSS %ld KB", ru.ru_maxrss);
  /* negative control: a limit that holds the dumps and the fixture */
  char *c1[] = {fixture, "import", "--describe", (char *)desc, "--out", (char *)out, "--max-bytes", "256M", NULL};
  hu_run(&r, c1, NULL);
  ck_assert_msg(r.status == 0, "control: %s", r.err);
}
END_TEST

/* Row 10: a grid entry over the limit is refused before any entry runs,
 * naming the entry; a repeated entry is refused (row 15). */
START_TEST(grid_entries_checked_first) {
  const char *g = hu_path("g.json");
  static const char grid[] = "{\"entries\": [{\"shape\": \"1,64,1,8\", \"chunk\": 16, \"devices\": [1]},\n"
                             "              {\"shape\": \"1,64,1,8\", \"chunk\": 4096, \"devices\": [1]}]}";
  hu_write(g, grid, sizeof grid - 1);
  hu_result r;
  char *a1[] = {parity, "sweep", "--grid", (char *)g, "--max-bytes", "2M", "--oracle", "dd", "--json",
                (char *)hu_path("r.json"), NULL};
  hu_run(&r, a1, NULL);
  hu_expect_refusal(&r, 2, "grid entry 1 over the limit", "entry 1", "kernel scratch", hu_dir, hu_path("r.json"), NULL, 0);
  ck_assert_msg(!strstr(r.out, "B1-T64"), "an entry ran before the refusal: %s", r.out);
  static const char dup[] = "{\"entries\": [{\"shape\": \"1,64,1,8\", \"chunk\": 16},\n"
                            "              {\"shape\": \"1,64,1,8\", \"chunk\": 16}]}";
  hu_write(g, dup, sizeof dup - 1);
  hu_run(&r, a1, NULL);
  hu_expect_refusal(&r, 2, "duplicate grid entry", "entry 1 repeats entry 0", NULL, hu_dir, hu_path("r.json"), NULL, 0);
  static const char dupp[] = "{\"entries\": [{\"shape\": \"1,64,1,8\", \"chunk\": 16, "
                             "\"prefix\": [\"sequential\", \"sequential\"]}]}";
  hu_write(g, dupp, sizeof dupp - 1);
  hu_run(&r, a1, NULL);
  hu_expect_refusal(&r, 2, "duplicate prefix", "lists 'sequential' twice", NULL, hu_dir, hu_path("r.json"), NULL, 0);
  /* an entry the policy has no rule for: refused before entry 0 runs */
  static const char pol[] = "{\"name\": \"float32 only\", \"version\": 1, \"rules\": [{\"id\": \"f32\", "
                            "\"kind\": \"absolute\", \"dtype\": \"float32\", \"metric\": \"rel_fro\", "
                            "\"limit_u\": 64, \"reason\": \"float32 only\"}]}";
  char polf[600];
  snprintf(polf, sizeof polf, "%s", hu_path("pol.json"));
  hu_write(polf, pol, sizeof pol - 1);
  static const char bf[] = "{\"entries\": [{\"shape\": \"1,64,1,8\", \"chunk\": 16, \"devices\": [1]},\n"
                           "  {\"shape\": \"1,64,1,8\", \"chunk\": 16, \"devices\": [1], \"dtype\": \"bfloat16\"}]}";
  hu_write(g, bf, sizeof bf - 1);
  char *a2[] = {parity, "sweep", "--grid", (char *)g, "--policy", polf, "--oracle", "dd", "--json",
                (char *)hu_path("r.json"), NULL};
  hu_run(&r, a2, NULL);
  char named[700];
  snprintf(named, sizeof named, "entry 1: policy %s (name 'float32 only') has no rule", polf);
  hu_expect_refusal(&r, 2, "entry without a rule", named, NULL, hu_dir,
                    hu_path("r.json"), NULL, 0);
  ck_assert_msg(!strstr(r.out, "B1-T64"), "an entry ran before the refusal: %s", r.out);
  /* negative control: two different entries within the limit (4M: the error model's memory, counted
   * since the policy follows it, takes the 2M above past the metrics' working memory) */
  static const char ok[] = "{\"entries\": [{\"shape\": \"1,64,1,8\", \"chunk\": 16, \"devices\": [1]},\n"
                           "              {\"shape\": \"1,64,1,8\", \"chunk\": 24, \"devices\": [1]}]}";
  hu_write(g, ok, sizeof ok - 1);
  char *a3[] = {parity, "sweep", "--grid", (char *)g, "--max-bytes", "4M", "--oracle", "dd", "--json",
                (char *)hu_path("r.json"), NULL};
  hu_run(&r, a3, NULL);
  ck_assert_msg(r.status == 0, "control: %s", r.err);
}
END_TEST

HU_MAIN("test_limits GDN-PARITY GDN-FIXTURE", 2, (&parity, &fixture), "limits", "limits", NULL, NULL, 300,
    chunk_scratch_counted, metrics_scratch_counted, threads_capped_and_failure_reported, npz_members_share_the_budget,
    grid_entries_checked_first)
