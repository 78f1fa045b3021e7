/* Ranks as devices (mpi/gdn_mpi.h): run under `mpirun -np D`, every rank is
 * one device of kern_affine_prefix, and the gathered result must equal the
 * simulated-device kernel bit for bit (o and ht compared with memcmp: the
 * claim is identity, so the bound is zero; o on rank 0, where it is
 * gathered, and each rank's own rows on that rank) for the same config, over
 *   every schedule (sequential, associative-scan: MPI_Allgather then the
 *   kernel's prefix; hillis-steele: MPI_Sendrecv rounds), both sharding
 *   modes, float32 / float64 / bfloat16 compute, IEEE and 6-pass matmuls,
 *   FTZ, and B Hv = 6 heads over 2 threads (3 batches, 3 exchanges).
 * The inputs have long-memory gates (g x 0.002) so the state crosses every
 * seam and the composition's values matter.
 * Negative controls, which a comparison that cannot fail would pass:
 *   - broken_compose: the MPI run equals the simulated broken run but not
 *     the correct one (every rank composes through the kernel's order);
 *   - hillis-steele over MPI differs from the simulated *sequential* run at
 *     D >= 4 somewhere (different composition orders round differently),
 *     so identity to the hillis-steele simulation is not vacuous;
 *   - cfg->devices != the world size is refused (GDN_ERR_INPUT), every rank.
 * Check runs without fork (CK_NOFORK: a forked child must not use MPI). */
#include <check.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "gdn_mpi.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "kern.h"
#include "../check_runner.h"
#include "../test_util_kern_cfg.h"

static int g_rank, g_size;

static void make(gdn_inputs *in, gdn_shape s) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  gdn_synth_opts o = {20, GDN_SYNTH_H0, 0};
  ck_assert_msg(gdn_synth_generate(in, &s, &o, &e) == GDN_OK, "%s", e.msg);
  for (size_t i = 0; i < gdn_shape_numel_gate(&s); i++) in->g[i] *= 0.002f;
}

static size_t n_o(const gdn_shape *s) { return (size_t)(s->B * s->T * s->Hv * s->Dv); }
static size_t n_ht(const gdn_shape *s) { return (size_t)(s->B * s->Hv * s->Dk * s->Dv); }

/* 1 when the MPI run equals the simulated one (both succeed) */
static int same(const gdn_inputs *in, const kern_config *mpi_cfg, const kern_config *sim_cfg) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs a, b;
  gdn_outputs_init(&a);
  gdn_outputs_init(&b);
  int rc = gdn_mpi_affine_prefix(in, mpi_cfg, &a, &e);
  ck_assert_msg(rc == GDN_OK, "rank %d: gdn_mpi_affine_prefix: %s", g_rank, e.msg);
  rc = kern_affine_prefix(in, sim_cfg, &b, &e);
  ck_assert_msg(rc == GDN_OK, "kern_affine_prefix: %s", e.msg);
  /* o is gathered to rank 0 alone: rank 0 compares all of it, rank r its
   * own rows (those it sent); the answer is every rank's, agreed */
  const gdn_shape *s = &in->shape;
  int eq = !memcmp(a.ht, b.ht, n_ht(s) * sizeof(double)) && a.dtype == b.dtype;
  if (g_rank == 0) {
    eq = eq && !memcmp(a.o, b.o, n_o(s) * sizeof(double));
  } else {
    kern_piece pc;
    kern_affine_piece(mpi_cfg, s->T, g_rank, &pc);
    const size_t row = (size_t)(s->Hv * s->Dv), n = (size_t)(pc.t1 - pc.t0) * row;
    for (int64_t bb = 0; bb < s->B; bb++) {
      const size_t at = ((size_t)(bb * s->T + pc.t0)) * row;
      eq = eq && !memcmp(a.o + at, b.o + at, n * sizeof(double));
    }
  }
  int all = eq;
  MPI_Allreduce(&eq, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  eq = all;
  gdn_outputs_clear(&a);
  gdn_outputs_clear(&b);
  return eq;
}

static kern_config cfg_of(gdn_dtype dt, kern_matmul mm, kern_prefix p, kern_shard sh, int ftz) {
  kern_config c = tkc_cfg(dt, 16, g_size, sh);
  c.matmul = mm;
  c.prefix = p;
  c.ftz = ftz;
  return c;
}

START_TEST(equals_simulated) {
  /* T = 37 D: D | T for token sharding; 37 tokens a device at C = 16 pads
   * 11 rows at every seam; chunks mode splits 3 per device unevenly */
  gdn_shape s = {2, 37 * g_size, 1, 3, 16, 8};
  gdn_inputs in;
  make(&in, s);
  static const struct {
    gdn_dtype dt;
    kern_matmul mm;
    int ftz;
  } num[] = {{GDN_DTYPE_F32, KERN_MATMUL_IEEE, 0}, {GDN_DTYPE_F64, KERN_MATMUL_IEEE, 0},
             {GDN_DTYPE_BF16, KERN_MATMUL_HIGHEST, 1}, {GDN_DTYPE_F32, KERN_MATMUL_DEFAULT, 1}};
  int checked = 0;
  for (int p = 0; p < 3; p++)
    for (int sh = 0; sh < 2; sh++)
      for (size_t k = 0; k < sizeof num / sizeof num[0]; k++) {
        kern_config c = cfg_of(num[k].dt, num[k].mm, (kern_prefix)p, (kern_shard)sh, num[k].ftz);
        ck_assert_msg(same(&in, &c, &c), "D=%d prefix %d shard %d numerics %zu: MPI != simulated",
                      g_size, p, sh, k);
        checked++;
      }
  ck_assert_int_eq(checked, 24);
  gdn_inputs_clear(&in);
}
END_TEST

START_TEST(negative_controls) {
  gdn_shape s = {1, 37 * g_size, 1, 2, 16, 8};
  gdn_inputs in;
  make(&in, s);
  for (int p = 0; p < 3; p++) {
    kern_config broken = cfg_of(GDN_DTYPE_F32, KERN_MATMUL_IEEE, (kern_prefix)p, KERN_SHARD_TOKENS, 0);
    kern_config right = broken;
    broken.mutant = KERN_MUTANT_COMPOSE_ORDER;
    ck_assert_msg(same(&in, &broken, &broken), "prefix %d: broken MPI != broken simulated", p);
    if (g_size >= 2) /* D = 2: only ht differs; D >= 3: o too */
      ck_assert_msg(!same(&in, &broken, &right), "prefix %d: broken MPI == correct simulated", p);
  }
  if (g_size >= 4) {
    kern_config h = cfg_of(GDN_DTYPE_F32, KERN_MATMUL_IEEE, KERN_PREFIX_HILLIS_STEELE,
                           KERN_SHARD_TOKENS, 0);
    kern_config q = h;
    q.prefix = KERN_PREFIX_SEQUENTIAL;
    ck_assert_msg(!same(&in, &h, &q), "D=%d: hillis-steele bit-identical to sequential here; "
                  "pick inputs where the orders round differently", g_size);
  }
  /* a world that is not the device count: refused on every rank */
  kern_config c = cfg_of(GDN_DTYPE_F32, KERN_MATMUL_IEEE, KERN_PREFIX_SEQUENTIAL, KERN_SHARD_CHUNKS, 0);
  c.devices = g_size + 1;
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs o;
  gdn_outputs_init(&o);
  ck_assert_int_eq(gdn_mpi_affine_prefix(&in, &c, &o, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "MPI ranks") != NULL, "%s", e.msg);
  ck_assert_ptr_null(o.o);
  gdn_inputs_clear(&in);
}
END_TEST

int main(int argc, char **argv) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_mpi w;
  gdn_threads_set(2);
  if (gdn_mpi_init(&argc, &argv, &w, &e)) {
    fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  g_rank = w.rank;
  g_size = w.size;
  Suite *su = suite_create("mpi_affine");
  CKR_TCASE(su, "ranks", 600, equals_simulated, negative_controls);
  int failed = ckr_run_with(su, CK_NOFORK, g_rank == 0 ? CK_NORMAL : CK_SILENT);
  /* a rank that failed an assertion stops mid-test (NOFORK longjmps out),
   * possibly between collectives: end every rank rather than hang */
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  gdn_mpi_finalize(&w);
  return any ? 1 : 0;
}
