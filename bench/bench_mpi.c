/* bench_mpi: the affine-prefix with MPI ranks as devices (gdn_mpi_affine_prefix)
 * against the same config simulated in one process on one thread.
 *
 *   mpirun -np D build/bench/bench_mpi B,T,H,D [C] [prefix]
 *
 * Rank 0 prints one line: the simulated run (kern_affine_prefix, one thread,
 * D simulated devices), the MPI run (the slowest rank, barrier to barrier,
 * including the all-gather of the outputs), their ratio, and the bytes one
 * rank sent for the pairs.  Every rank runs one thread (gdn_threads_set(1)),
 * so D ranks use D cores; the results are checked bit-identical as well. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_mpi.h"
#include "gdn_synth.h"
#include "gdn_threads.h"
#include "kern.h"

int main(int argc, char **argv) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_mpi w;
  gdn_threads_set(1);
  if (gdn_mpi_init(&argc, &argv, &w, &e) || argc < 2) {
    fprintf(stderr, "usage: mpirun -np D bench_mpi B,T,H,D [C] [prefix] (%s)\n", e.msg);
    return 2;
  }
  gdn_shape s;
  kern_config c;
  kern_config_init(&c);
  c.devices = w.size;
  if (argc > 2) c.chunk = atoi(argv[2]);
  if ((argc > 3 && kern_prefix_parse(argv[3], &c.prefix, &e)) || gdn_shape_parse(&s, argv[1], "B,T,H,D", &e)) {
    fprintf(stderr, "bench_mpi: %s\n", e.msg);
    return 2;
  }
  gdn_inputs in;
  gdn_inputs_init(&in);
  gdn_synth_opts o = {1, 0, 0};
  gdn_outputs a, b;
  gdn_outputs_init(&a);
  gdn_outputs_init(&b);
  if (gdn_synth_generate(&in, &s, &o, &e)) return 3;
  double t0 = MPI_Wtime();
  if (w.rank == 0 && kern_affine_prefix(&in, &c, &b, &e)) return 3;
  double sim = MPI_Wtime() - t0;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  if (gdn_mpi_affine_prefix(&in, &c, &a, &e)) {
    fprintf(stderr, "bench_mpi: %s\n", e.msg);
    return 3;
  }
  double mine = MPI_Wtime() - t0, slowest = 0;
  MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (w.rank == 0) {
    const size_t no = (size_t)(s.B * s.T * s.Hv * s.Dv), nh = (size_t)(s.B * s.Hv * s.Dk * s.Dv);
    int same = !memcmp(a.o, b.o, no * sizeof(double)) && !memcmp(a.ht, b.ht, nh * sizeof(double));
    double pair = 4.0 * (double)(s.Dk * s.Dk + s.Dk * s.Dv) * (double)(s.B * s.Hv);
    printf("%s D=%d C=%lld %s: simulated 1 thread %.3f s, MPI %d ranks %.3f s (x%.2f); "
           "pairs sent per rank %.0f B (all-gather) ; bit-identical %s\n",
           argv[1], w.size, (long long)c.chunk, argc > 3 ? argv[3] : "sequential", sim, w.size, slowest,
           sim / slowest, pair, same ? "yes" : "NO");
  }
  gdn_outputs_clear(&a);
  gdn_outputs_clear(&b);
  gdn_inputs_clear(&in);
  gdn_mpi_finalize(&w);
  return 0;
}
