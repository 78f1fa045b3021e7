/* kern_scratch_bytes and kern_threads: the scratch a caller counts against
 * --max-bytes (parity/run/parity_budget.h) is what the kernels allocate.
 *
 * Measured as in test_memory: gdn_alloc's peak during the call minus what
 * the call leaves held (the outputs) is the kernel's working set.  The
 * larger of kern_scan's and kern_affine_prefix's working sets must equal
 * kern_scratch_bytes up to the C library's rounding of each block (usable
 * size >= requested; a page at most for an mmap-ed block), and neither may
 * exceed it.  The negative controls: the count grows with the chunk size
 * squared (so a count that ignored C would fail), and with the threads up
 * to the work, then no more. */
#include <check.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern_test_util.h"
#include "../check_runner.h"

#define ROUNDING_PER_BLOCK 4096 /* an mmap-ed block is page-rounded */

static long long working(kt_kernel k, const gdn_inputs *in, const kern_config *c, long *allocs) {
  gdn_outputs out = kt_outputs();
  gdn_error e;
  gdn_error_init(&e);
  const long n0 = gdn_alloc_count();
  gdn_alloc_peak_reset();
  ck_assert_int_eq(kt_run_seams(k, in, c, &out, NULL, &e), GDN_OK);
  const long long w = gdn_alloc_bytes_peak() - gdn_alloc_bytes_live();
  *allocs = gdn_alloc_count() - n0;
  gdn_outputs_clear(&out);
  return w;
}

static void agree(int64_t H, int64_t T, int64_t C, int64_t D, kern_matmul mm, int threads) {
  gdn_shape s = {1, T, H, H, 16, 16};
  gdn_inputs in = kt_inputs(s, 3, 0, 1, 0.01f);
  gdn_threads_set(threads);
  kern_config c = kt_cfg(GDN_DTYPE_F32, C, D);
  c.matmul = mm;
  long na, nb;
  long long ws = working(K_SCAN, &in, &c, &na), wa = working(K_AFFINE, &in, &c, &nb);
  const long long counted = (long long)kern_scratch_bytes(&s, &c);
  const long long w = ws > wa ? ws : wa;
  const long n = ws > wa ? na : nb;
  ck_assert_msg(w >= counted && w <= counted + (long long)(na > nb ? na : nb) * ROUNDING_PER_BLOCK,
                "H=%ld C=%ld D=%ld %s %d threads: counted %lld, kernels use %lld (scan) and %lld (affine), %ld "
                "allocations",
                (long)H, (long)C, (long)D, kern_matmul_name(mm), threads, counted, ws, wa, n);
  gdn_inputs_clear(&in);
}

START_TEST(count_is_the_allocation) {
  if (gdn_alloc_bytes_live() < 0) return; /* no accounting on this C library */
  agree(2, 256, 64, 1, KERN_MATMUL_IEEE, 2);    /* a thread per head */
  agree(1, 256, 64, 2, KERN_MATMUL_IEEE, 2);    /* a team on one head */
  agree(2, 256, 32, 4, KERN_MATMUL_HIGHEST, 2); /* operand splits */
  agree(1, 64, 256, 1, KERN_MATMUL_IEEE, 1);    /* a chunk longer than T */
}
END_TEST

START_TEST(count_grows_with_chunk_squared_and_capped_threads) {
  gdn_shape s = {1, 64, 1, 1, 16, 16};
  gdn_threads_set(2);
  kern_config c = kt_cfg(GDN_DTYPE_F32, 256, 1);
  size_t a = kern_scratch_bytes(&s, &c);
  c.chunk = 1024;
  size_t b = kern_scratch_bytes(&s, &c);
  /* linear in C would be 4x; the C x C blocks make it over 8x (11x here) */
  ck_assert_msg(b > 8 * a, "C x4 gives %zu -> %zu bytes: not ~C^2", a, b);
  /* threads: at most the work (max(B Hv, Dv) = 16 here), at least 1 */
  gdn_threads_set(4096);
  ck_assert_int_eq(kern_threads(&s), 16);
  size_t t16 = kern_scratch_bytes(&s, &c);
  gdn_threads_set(16);
  ck_assert_uint_eq(kern_scratch_bytes(&s, &c), t16);
  gdn_threads_set(1);
  ck_assert_int_eq(kern_threads(&s), 1);
  ck_assert_msg(kern_scratch_bytes(&s, &c) < t16 / 8, "one thread's scratch is not ~1/16 of 16 threads'");
  ck_assert_int_eq(gdn_threads_for(0), 1);
  /* an impossible configuration saturates rather than wraps */
  c.chunk = (int64_t)1 << 40;
  ck_assert_uint_eq(kern_scratch_bytes(&s, &c), SIZE_MAX);
}
END_TEST

int main(void) {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 128 * 1024); /* a fixed threshold: test_memory.c says why */
#endif
  Suite *su = suite_create("scratch");
  CKR_TCASE(su, "scratch", 240, count_is_the_allocation, count_grows_with_chunk_squared_and_capped_threads);
  return ckr_run(su);
}
