/* Peak memory of the kernels does not grow with the number of chunks.
 *
 * What a kernel holds besides its outputs is per-thread chunk scratch, for
 * kern_affine_prefix the gathered (A, B) pair of every device (one pair per
 * device, as upstream's fold under jax.checkpoint), and the seam states when
 * asked for: O(threads x chunk temporaries + devices x Dk (Dk + Dv)), never
 * O(T).  Measured through gdn_alloc's byte accounting: the peak during the
 * call minus what is still held after it (o, ht, the seams) is the kernel's
 * working set.  It must be the same number of bytes at T = 4096 and
 * T = 65536 (16x the chunks, the same B, H, D), for the scan and for the
 * affine-prefix kernel at 1 and 4 devices, in IEEE and in the 6-pass mode
 * (whose scratch holds the operand splits), with one thread per head and
 * with a team on one head.  And after the outputs are freed nothing is left.
 *
 * The bound: the calls make the same number of allocations (asserted) of
 * the same requested sizes, but gdn_alloc counts each block at the C
 * library's usable size, which for one request can differ with where the
 * block lands.  The test fixes glibc's mmap threshold (mallopt; otherwise it
 * adapts to freed sizes and moves a block between the heap and mmap, a page
 * of rounding), so a block is mmap-ed (page-rounded: the same every time) or
 * from the heap, where an aligned block may keep up to 48 bytes of slack.
 * So the working sets may differ by at most 128 bytes per allocation: a few
 * hundred bytes, where growth with the chunks would show as one extra byte
 * per chunk, 15360 more chunks at T = 65536. */
#include <check.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern_test_util.h"
#include "../check_runner.h"

typedef struct measured {
  long long working; /* peak during the call minus what the call left held */
  long long kept;    /* what the call left held: the outputs (and seams) */
  long allocs;       /* allocations the call made */
} measured;

#define ROUNDING_PER_BLOCK 128 /* aligned heap block slack: see above */

static measured run(kt_kernel k, int64_t T, int64_t H, int64_t D, kern_matmul mm, int threads,
                    int with_seams) {
  gdn_inputs in = kt_inputs((gdn_shape){1, T, H, H, 16, 16}, 11, 1, 1, 0.01f);
  gdn_threads_set(threads);
  kern_config c = kt_cfg(GDN_DTYPE_F32, 64, D);
  c.matmul = mm;
  gdn_outputs out = kt_outputs();
  kern_affine_seams sm;
  kern_affine_seams_init(&sm);
  gdn_error e;
  gdn_error_init(&e);
  const long long before = gdn_alloc_bytes_live();
  const long n0 = gdn_alloc_count();
  gdn_alloc_peak_reset();
  int rc = kt_run_seams(k, &in, &c, &out, with_seams ? &sm : NULL, &e);
  ck_assert_msg(rc == GDN_OK, "%s: %s", kt_kernel_names[k], e.msg);
  const long long after = gdn_alloc_bytes_live(), peak = gdn_alloc_bytes_peak();
  measured m = {peak - after, after - before, gdn_alloc_count() - n0};
  gdn_outputs_clear(&out);
  kern_affine_seams_clear(&sm);
  ck_assert_msg(gdn_alloc_bytes_live() == before, "%s left %lld bytes allocated",
                kt_kernel_names[k], gdn_alloc_bytes_live() - before);
  gdn_inputs_clear(&in);
  return m;
}

static void flat(kt_kernel k, int64_t H, int64_t D, kern_matmul mm, int threads, int seams) {
  measured a = run(k, 4096, H, D, mm, threads, seams);
  measured b = run(k, 65536, H, D, mm, threads, seams);
  ck_assert_msg(a.working > 0, "no working set measured");
  ck_assert_int_eq(a.allocs, b.allocs);
  const long long d = a.working > b.working ? a.working - b.working : b.working - a.working;
  ck_assert_msg(d <= a.allocs * ROUNDING_PER_BLOCK,
                "%s H=%ld D=%ld %s %d threads: working set %lld bytes at T = 4096, %lld at "
                "T = 65536 (%ld allocations)",
                kt_kernel_names[k], (long)H, (long)D, kern_matmul_name(mm), threads, a.working,
                b.working, a.allocs);
  /* the outputs themselves do grow: o gains 15 x its size at T = 4096 (a
   * check that the accounting sees them) */
  const long long o_a = 4096LL * H * 16 * (long long)sizeof(double);
  ck_assert(b.kept - a.kept >= 15 * o_a);
  /* and the working set is small next to o at the long length */
  ck_assert(b.working < b.kept);
}

START_TEST(accounting_counts_blocks) {
  if (gdn_alloc_bytes_live() < 0) return; /* no accounting on this C library */
  const long long live = gdn_alloc_bytes_live();
  gdn_alloc_peak_reset();
  void *p = gdn_malloc(100000, "test", NULL);
  ck_assert_ptr_nonnull(p);
  ck_assert(gdn_alloc_bytes_live() >= live + 100000);
  ck_assert(gdn_alloc_bytes_peak() == gdn_alloc_bytes_live());
  gdn_free(p);
  ck_assert(gdn_alloc_bytes_live() == live);
  ck_assert(gdn_alloc_bytes_peak() >= live + 100000);
  gdn_alloc_peak_reset();
  ck_assert(gdn_alloc_bytes_peak() == live);
}
END_TEST

START_TEST(scan_flat) {
  if (gdn_alloc_bytes_live() < 0) return;
  flat(K_SCAN, 2, 1, KERN_MATMUL_IEEE, 2, 0);    /* a thread per head */
  flat(K_SCAN, 1, 1, KERN_MATMUL_IEEE, 2, 0);    /* a team on one head */
  flat(K_SCAN, 1, 1, KERN_MATMUL_HIGHEST, 2, 0); /* splits */
}
END_TEST

START_TEST(affine_flat) {
  if (gdn_alloc_bytes_live() < 0) return;
  flat(K_AFFINE, 2, 4, KERN_MATMUL_IEEE, 2, 1);
  flat(K_AFFINE, 1, 4, KERN_MATMUL_HIGHEST, 2, 1);
  flat(K_AFFINE, 1, 1, KERN_MATMUL_IEEE, 2, 0); /* D = 1: the team replays */
  flat(K_AFFINE, 2, 4, KERN_MATMUL_HIGHEST, 1, 0);
}
END_TEST

int main(void) {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 128 * 1024); /* a fixed threshold: see above */
#endif
  Suite *su = suite_create("memory");
  CKR_TCASE(su, "memory", 240, accounting_counts_blocks, scan_flat, affine_flat);
  return ckr_run(su);
}
