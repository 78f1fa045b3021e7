/* bench_mpi_oracle: the oracle's forward dealt across MPI ranks
 * (parity_dist_oracle_mpfr / _dd: head b Hv + j on rank (b Hv + j) mod N).
 *
 *   mpirun -np N build/bench/bench_mpi_oracle mpfr|dd B,T,H,D [threads]
 *
 * Every rank runs `threads` threads (default 1).  Rank 0 prints one line:
 * the slowest rank's time (barrier to barrier: its heads, the exchange of
 * statuses and tallies, the broadcast of every head), the certificate,
 * and the cost per state column and token (seconds x ranks x threads /
 * (B Hv Dv T): core-seconds, the figure a projection multiplies).  With
 * `check` as a fourth argument rank 0 also runs the whole oracle in one
 * process and says whether the outputs are identical (not timed). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_synth.h"
#include "gdn_threads.h"
#include "parity_dist.h"

static int run(int dd, const gdn_inputs *in, gdn_outputs *out, int *bits, int dealt, gdn_error *e) {
  parity_dist_set_collective(dealt);
  int rc;
  if (dd) {
    oracle_dd_config c;
    oracle_dd_config_init(&c);
    oracle_dd_certificate k;
    rc = parity_dist_oracle_dd(in, &c, out, &k, e);
    *bits = k.certified_bits;
  } else {
    oracle_config c;
    oracle_config_init(&c);
    oracle_certificate k;
    rc = parity_dist_oracle_mpfr(in, &c, out, &k, e);
    *bits = k.certified_bits;
  }
  return rc;
}

int main(int argc, char **argv) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_shape s;
  if (parity_dist_start(&argc, &argv, &e) || argc < 3 || (strcmp(argv[1], "mpfr") && strcmp(argv[1], "dd")) ||
      gdn_shape_parse(&s, argv[2], "B,T,H,D", &e)) {
    fprintf(stderr, "usage: mpirun -np N bench_mpi_oracle mpfr|dd B,T,H,D [threads] [check] (%s)\n", e.msg);
    return 2;
  }
  const int dd = !strcmp(argv[1], "dd"), rank = parity_dist_rank(), size = parity_dist_size();
  const int threads = argc > 3 ? atoi(argv[3]) : 1;
  gdn_threads_set(threads);
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_synth_opts o = {1, 0, 0};
  if (gdn_synth_generate(&in, &s, &o, &e)) return 3;
  gdn_outputs a;
  gdn_outputs_init(&a);
  int bits = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (run(dd, &in, &a, &bits, 1, &e)) {
    fprintf(stderr, "bench_mpi_oracle: rank %d: %s\n", rank, e.msg);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  double mine = MPI_Wtime() - t0, slowest = 0;
  MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    const double cols = (double)(s.B * s.Hv * s.Dv) * (double)s.T;
    printf("%s B,T,Hv,D = %lld,%lld,%lld,%lld: %d ranks x %d threads: %.2f s (slowest rank), %d bits; "
           "%.3g core-s per column-token",
           argv[1], (long long)s.B, (long long)s.T, (long long)s.Hv, (long long)s.Dk, size, threads, slowest, bits,
           slowest * size * threads / cols);
    if (argc > 4 && !strcmp(argv[4], "check")) {
      gdn_outputs b;
      gdn_outputs_init(&b);
      int bb = 0;
      if (run(dd, &in, &b, &bb, 0, &e)) return 3;
      int same = !memcmp(a.o, b.o, gdn_shape_numel_v(&s) * sizeof(double)) &&
                 !memcmp(a.ht, b.ht, gdn_shape_numel_state(&s) * sizeof(double)) && bb == bits;
      printf("; %s the one-process oracle", same ? "identical to" : "DIFFERENT FROM");
      gdn_outputs_clear(&b);
    }
    printf("\n");
  }
  gdn_outputs_clear(&a);
  gdn_inputs_clear(&in);
  parity_dist_end();
  return 0;
}
