/* gdn-parity: the command (docs/options.md, docs/errors.md).
 *
 *   gdn-parity --shape B,T,H,D [options]          synthetic case(s): the main job
 *   gdn-parity sweep --grid GRID.json [options]   a grid of cases
 *   gdn-parity trust [options]                    false FAILs of correct reformulations (parity_trust.h)
 *   gdn-parity regen FILE.h5 [options]            a fixture's /oracle, groups dealt over ranks (parity_regen.h)
 *   gdn-parity --print-policy                     the built-in tolerance policy
 *
 * Exit status: 0 every case within tolerance, 1 at least one case out of
 * tolerance, 2 bad usage or bad input, 3 internal error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_cli.h"
#include "gdn_config.h"
#include "gdn_error.h"
#include "gdn_text.h"
#include "gdn_threads.h"
#include "parity_cli.h"
#include "parity_dist.h"

/* Under mpirun (parity_dist.h) only rank 0 prints the table; an error is
 * printed by rank 0, or by the rank it is about when only that rank can
 * know it (not bad input, which every rank sees alike); any error but bad
 * input ends every rank with its exit status (MPI_Abort). */
/* scripts/gdn-mpirun: rank 0 (only: the caller checks, while MPI still
 * says which rank this is) leaves its exit status where the wrapper reads
 * it, since mpirun's own failures exit 1 too. */
static int finish(int status) {
  const char *p = getenv("GDN_MPIRUN_STATUS");
  FILE *f = p && *p ? fopen(p, "w") : NULL;
  if (f) {
    fprintf(f, "%d\n", status);
    fclose(f);
  }
  return status;
}

int main(int argc, char **argv) {
  gdn_error e;
  gdn_error_init(&e);
  if (parity_dist_start(&argc, &argv, &e)) {
    fprintf(stderr, "gdn-parity: error: %s\n", gdn_text_show(e.msg));
    return gdn_error_exit_status(e.code);
  }
  FILE *out = stdout;
  if (parity_dist_rank() != 0 && !(out = fopen("/dev/null", "w"))) out = stdout;
  gdn_threads_guard_install("gdn-parity");
  int status = parity_cli_main(argc, argv, out, stderr, &e);
  gdn_threads_guard_done();
  if (out != stdout) fclose(out);
  if (e.code) {
    /* Messages quote fixture strings and arguments: one escaped line. */
    if (parity_dist_rank() == 0 || e.code != GDN_ERR_INPUT)
      fprintf(stderr, "gdn-parity: error: %s\n", gdn_text_show(e.msg));
    fflush(stderr);
    if (parity_dist_rank() == 0) finish(gdn_error_exit_status(e.code));
    /* bad input: every rank refused it alike and ends alike; anything else
     * may be this rank's alone while the others wait on it */
    if (e.code == GDN_ERR_INPUT && !parity_dist_diverged())
      parity_dist_end();
    else
      parity_dist_abort(gdn_error_exit_status(e.code));
    return gdn_error_exit_status(e.code);
  }
  const int judge = parity_dist_rank() == 0; /* before parity_dist_end: every rank is 0 after */
  if (judge) finish(status);
  parity_dist_end();
  /* Only rank 0 judges: the others' --backend mpi outputs are their own rows
   * alone (gdn_mpi.h), their verdicts never shown; so plain mpirun, which
   * reports a rank's non-zero status, reports rank 0's. */
  return judge ? status : 0;
}
