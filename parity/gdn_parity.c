/* gdn-parity: the command (../shared/specs/cli-contract.md).
 *
 *   gdn-parity --shape B,T,H,D [options]          synthetic case(s): the main job
 *   gdn-parity sweep --grid GRID.json [options]   a grid of cases
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

int main(int argc, char **argv) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_threads_guard_install("gdn-parity");
  int status = parity_cli_main(argc, argv, stdout, stderr, &e);
  gdn_threads_guard_done();
  if (e.code) {
    /* Messages quote fixture strings and arguments: one escaped line. */
    fprintf(stderr, "gdn-parity: error: %s\n", gdn_text_show(e.msg));
    return gdn_error_exit_status(e.code);
  }
  return status;
}
