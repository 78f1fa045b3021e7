/* A head scanned by a team of threads: bit-identical to one thread.
 *
 * When there are fewer heads than threads (B Hv = 1: the 1M-token case) or
 * heads left over after the last whole round, kern_scan and
 * kern_affine_prefix's replay run one head on all threads together: each
 * chunk's h-independent part (prep) is computed once, by one thread, and
 * the scan body is split over column blocks of Dv (kern_chunk_tmpl.h,
 * kchunk_scan_team).  The bf16 pass modes skip a pass whose operand part is
 * all zero; the team ORs the column blocks' flags so the decision is the
 * whole matrix's.  These cases make the decision differ between blocks:
 * h0 = 0 (every part zero in the first chunk), v zero beyond column 16 (so
 * some column blocks of v_new and h have only zero parts while the first
 * does not), and Dv below 16 x threads (threads with no columns at all).
 * Every kernel output, and the affine seams, must be the same bits for 1,
 * 2, 3 and 4 threads, with the heads left over from whole rounds (B Hv = 3,
 * 5) and for shards left over (D = 3 on 2 threads).  memcmp, no tolerance. */
#include <check.h>

#include <omp.h>
#include <stdlib.h>

#include "gdn_bf16.h"
#include "gdn_threads.h"
#include "kern_mm.h"
#include "kern_team.h"
#include "kern_test_util.h"
#include "../check_runner.h"

typedef struct mode {
  gdn_dtype dt;
  kern_matmul mm;
  int ftz;
} mode;

static const mode modes[] = {
    {GDN_DTYPE_F32, KERN_MATMUL_IEEE, 0},    {GDN_DTYPE_F32, KERN_MATMUL_HIGHEST, 0},
    {GDN_DTYPE_F32, KERN_MATMUL_HIGH, 1},    {GDN_DTYPE_F32, KERN_MATMUL_DEFAULT, 0},
    {GDN_DTYPE_BF16, KERN_MATMUL_HIGHEST, 1}, {GDN_DTYPE_F64, KERN_MATMUL_IEEE, 0},
};

/* Inputs of shape s; with zero_cols, the value columns d >= 16 of v are 0:
 * then whole column blocks of v_new and (from h0 = 0) of h are zero while
 * the block holding columns 0 .. 15 is not. */
static void make(gdn_inputs *in, gdn_shape s, int h0, int zero_cols) {
  kt_make(in, s, 77, h0, 1, 0.01f);
  if (!zero_cols) return;
  for (int64_t t = 0; t < s.B * s.T * s.Hv; t++)
    for (int64_t d = 0; d < s.Dv; d++)
      if (d >= 16) in->v[t * s.Dv + d] = 0;
}

static void run(kt_kernel k, const gdn_inputs *in, mode md, int64_t D, int threads,
                gdn_outputs *out, kern_affine_seams *sm) {
  gdn_threads_set(threads);
  kern_config c = kt_cfg(md.dt, 16, D);
  c.matmul = md.mm;
  c.ftz = md.ftz;
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(out);
  int rc = kt_run_seams(k, in, &c, out, k == K_AFFINE && D > 1 ? sm : NULL, &e);
  ck_assert_msg(rc == GDN_OK, "%s: %s", kt_kernel_names[k], e.msg);
}

static void same_for_teams(gdn_shape s, int h0, int zero_cols, kt_kernel k, int64_t D) {
  gdn_inputs in;
  make(&in, s, h0, zero_cols);
  for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
    gdn_outputs ref, x;
    kern_affine_seams sref, sx;
    kern_affine_seams_init(&sref);
    kern_affine_seams_init(&sx);
    run(k, &in, modes[mi], D, 1, &ref, &sref);
    for (int nt = 2; nt <= 4; nt++) {
      run(k, &in, modes[mi], D, nt, &x, &sx);
      ck_assert_msg(kt_same_outputs(&x, &ref),
                    "%s %s %s D=%ld B=%ld Hv=%ld Dv=%ld h0=%d zero_cols=%d: %d threads differ "
                    "from 1",
                    kt_kernel_names[k], gdn_dtype_name(modes[mi].dt),
                    kern_matmul_name(modes[mi].mm), (long)D, (long)s.B, (long)s.Hv, (long)s.Dv,
                    h0, zero_cols, nt);
      if (sref.h_in) {
        size_t n = (size_t)(sref.B * sref.Hv * sref.devices * sref.Dk * sref.Dv);
        ck_assert(kt_same(sx.h_in, sref.h_in, n) && kt_same(sx.h_out, sref.h_out, n));
      }
      gdn_outputs_clear(&x);
      kern_affine_seams_clear(&sx);
    }
    gdn_outputs_clear(&ref);
    kern_affine_seams_clear(&sref);
  }
  gdn_inputs_clear(&in);
}

/* The teams' cases, one row a run of same_for_teams: */
static const struct team_case {
  gdn_shape s;
  int h0, zero_cols;
  kt_kernel k;
  int64_t D;
} team_cases[] = {
    /* One head, Dv = 40 (blocks 32 + 8 on 2 threads, 16 + 16 + 8 on 3, three
     * of four threads with columns on 4), from h0 = 0 and with zero v columns. */
    {{1, 150, 1, 1, 24, 40}, 0, 1, K_SCAN, 1},
    {{1, 150, 1, 1, 24, 40}, 1, 0, K_SCAN, 1},
    {{1, 150, 1, 1, 24, 40}, 0, 1, K_AFFINE, 1}, /* the whole replay by the team */
    {{1, 150, 1, 1, 24, 40}, 1, 1, K_AFFINE, 3}, /* shards left over after whole rounds */
    {{1, 150, 1, 1, 24, 40}, 0, 0, K_AFFINE, 4},
    /* Dv = 12: one column block; the other threads only prep and exchange. */
    {{1, 90, 1, 1, 16, 12}, 1, 1, K_SCAN, 1},
    {{1, 90, 1, 1, 16, 12}, 0, 0, K_AFFINE, 1},
    /* Heads left over after whole rounds: 3 heads (grouped, 1 key head) and
     * 5 heads; D = 128-style panels (Dv = 64 = 4 panels). */
    {{1, 70, 1, 3, 16, 64}, 1, 0, K_SCAN, 1},
    {{1, 70, 1, 3, 16, 64}, 0, 1, K_AFFINE, 2},
    {{5, 40, 1, 1, 16, 20}, 1, 1, K_SCAN, 1},
    {{5, 40, 1, 1, 16, 20}, 1, 0, K_AFFINE, 1},
};

START_TEST(same_for_every_team) {
  const struct team_case *c = &team_cases[_i];
  same_for_teams(c->s, c->h0, c->zero_cols, c->k, c->D);
}
END_TEST

/* The flag exchange itself (kern_team.h): every thread of a team gets the
 * OR of all threads' words at every exchange, whether its own word already
 * has every part (no wait) or not (it waits for the others), over many
 * exchanges with groups of chunks separated by barriers as
 * kchunk_scan_team has them.  (End to end the whole-matrix decision rarely
 * shows: a skipped low pass of an all-zero block changes at most the sign
 * of a zero, and only for -0 entries in the zero block, so the exchange is
 * checked here directly.) */
START_TEST(team_or_is_the_or_of_every_block) {
  for (int nt = 2; nt <= 4; nt++) {
    uint64_t *words = calloc((size_t)nt * KERN_TEAM_RING(nt), sizeof *words);
    ck_assert_ptr_nonnull(words);
    int bad = 0;
#pragma omp parallel num_threads(nt) reduction(+ : bad)
    {
      const int tid = omp_get_thread_num();
      kern_team_sync ts = {tid, omp_get_num_threads(), words, 0};
      for (int g = 0; g < 200; g++) {
        for (int x = 0; x < 2 * ts.nt; x++) { /* at most 2 nt exchanges per group */
          const int seq = g * 2 * ts.nt + x;
          unsigned all = 1u;
          for (int u = 0; u < ts.nt; u++) all |= (unsigned)((seq * 7 + u * 3) % 8);
          const unsigned mine = 1u | (unsigned)((seq * 7 + tid * 3) % 8);
          bad += kern_team_or(&ts, mine, 7u) != all;
        }
#pragma omp barrier
      }
    }
    free(words);
    ck_assert_msg(bad == 0, "%d threads: %d exchanges gave a wrong OR", nt, bad);
  }
}
END_TEST

/* The split by column blocks (kern_split_fill_cols) stores the same parts
 * as the whole-matrix split, and the OR of the blocks' flags is the whole
 * matrix's, for every mode and every block boundary, on a matrix with
 * all-zero column ranges, bfloat16-exact columns and signed zeros. */
START_TEST(split_by_blocks_is_the_split) {
  enum { R = 7, L = 45 };
  float x[R * L];
  for (int i = 0; i < R * L; i++) {
    const int col = i % L;
    float v = (float)((i * 37 % 101) - 50) / 7.0f;
    if (col >= 30) v = (i & 1) ? -0.0f : 0.0f;   /* zero columns */
    else if (col >= 20) v = gdn_bf16_round(v); /* one part only */
    x[i] = v;
  }
  for (int mode = 0; mode <= 3; mode++) {
    const kern_matmul mm = (kern_matmul)mode;
    const size_t ne = kern_split_elems_f32(mm, R * L);
    float *m1 = calloc(ne ? ne : 1, sizeof(float)), *m2 = calloc(ne ? ne : 1, sizeof(float));
    ck_assert(m1 && m2);
    kern_split_f32 whole, blocks;
    kern_split_bind_f32(&whole, mm, m1, R * L);
    kern_split_fill_f32(&whole, mm, x, R * L);
    static const int cuts[][4] = {{0, 45, 45, 45}, {0, 16, 32, 45}, {0, 30, 45, 45},
                                  {0, 20, 30, 45}, {0, 1, 44, 45}};
    for (size_t ci = 0; ci < sizeof cuts / sizeof cuts[0]; ci++) {
      kern_split_bind_f32(&blocks, mm, m2, R * L);
      unsigned nz = 0;
      for (int b = 0; b < 3; b++)
        nz |= kern_split_fill_cols_f32(&blocks, mm, x, R, L, cuts[ci][b], cuts[ci][b + 1]);
      ck_assert_uint_eq(nz, whole.nz);
      ck_assert(blocks.x == x);
      for (int p = 0; p < kern_mm_parts(mm); p++)
        ck_assert(memcmp(whole.part[p], blocks.part[p], sizeof x) == 0);
    }
    free(m1);
    free(m2);
  }
}
END_TEST

CKR_MAIN_TABLE("team", "team", 120, team_cases, (same_for_every_team), team_or_is_the_or_of_every_block,
    split_by_blocks_is_the_split)
