/* gdn_mpi: MPI ranks as the devices of context parallelism, and the world
 * the distributed commands run in.  Only this folder includes <mpi.h>;
 * kernels/ knows no transport (kern_affine_prefix_rank takes an exchange
 * callback) and parity/ calls these functions.
 *
 * gdn_mpi_affine_prefix: rank r of a world of D ranks is device r of
 * kern_affine_prefix with cfg->devices = D.  Each rank folds its own piece
 * (kern_affine_piece, either sharding mode), then per batch of heads:
 *   sequential, associative-scan   MPI_Allgather of the pairs (each rank
 *       sends nh (Dk^2 + Dk Dv) elements, receives D times that), then
 *       every rank takes the prefix over the D gathered pairs with the
 *       kernel's own schedule code (redundantly, as under all_gather);
 *   hillis-steele   ceil(log2 D) rounds of MPI_Sendrecv, rank r sending its
 *       running pair to r + 2^k and composing the one received from
 *       r - 2^k (x[r] = x[r] o x[r - 2^k], upstream's ppermute rounds),
 *       then one shift (rank r's inclusive prefix to r + 1): the exclusive
 *       prefix; rank D - 1 holds the full composition.
 * Each rank replays its piece; the o rows are gathered to rank 0
 * (MPI_Gatherv, per batch element: only rank 0 judges and writes) and ht
 * is broadcast from rank D - 1.  So rank 0 returns the whole output; rank
 * r > 0 returns ht and its own o rows (kern_affine_piece's [t0, t1)); its
 * other rows are not gathered there (unspecified) -- its judgement of them
 * is never shown, nor its exit status (parity/gdn_parity.c).  Compositions are the kernel's (kern_affine_compose in the
 * resolved matmul mode, broken_compose honoured), messages carry the
 * values' bits (MPI_FLOAT / MPI_DOUBLE), so the result equals
 * kern_affine_prefix's bit for bit for the same config.
 * Communication per batch of nh heads with P = Dk^2 + Dk Dv elements a pair:
 *   all-gather D nh P elements received per rank; hillis-steele
 *   (ceil(log2 D) + 1) nh P sent per rank; outputs: each rank sends its
 *   B (T / D) Hv Dv doubles of o to rank 0, B Hv Dk Dv broadcast.
 *
 * Errors: every MPI call returns (MPI_ERRORS_RETURN on the world); a
 * failure gives GDN_ERR_INTERNAL "rank r: MPI_xxx failed: <MPI's words>"
 * and `out` cleared.  cfg->devices must equal the world size
 * (GDN_ERR_INPUT otherwise).
 *
 * Testing only: GDN_TEST_MPI_DIE="R:STAGE" makes rank R kill itself with
 * SIGKILL at STAGE (fold: before its first exchange; replay: after the
 * last exchange, before the output gather), to test what a lost rank does;
 * STAGE message makes rank R's first exchange an invalid MPI call (a
 * negative count), to test what a failed message does.
 */
#ifndef GDN_MPI_H
#define GDN_MPI_H

#include "gdn_error.h"
#include "gdn_grads.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "kern_config.h"

typedef struct gdn_mpi {
  int rank, size;
  int initialised; /* by gdn_mpi_init (finalise then) */
} gdn_mpi;

/* MPI_Init_thread (FUNNELED: only the master thread calls MPI) and errors
 * returned on MPI_COMM_WORLD.  Safe when MPI is already initialised.
 * gdn_mpi_affine_prefix agrees one thread count over the ranks (the
 * smallest; gdn_threads_set): the kernel's batches of heads must match. */
int gdn_mpi_init(int *argc, char ***argv, gdn_mpi *w, gdn_error *e);
void gdn_mpi_finalize(gdn_mpi *w);
/* Whether this process was started by mpirun (Open MPI's or PMIx's
 * environment), without initialising MPI. */
int gdn_mpi_launched(void);

int gdn_mpi_affine_prefix(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out,
                          gdn_error *e);

/* GDN_TEST_MPI_DIE: whether it names this rank and stage; _die: SIGKILL
 * then.  Stages of a sweep (parity_dist.c): "sweep" dies before the rank's
 * first grid entry, "entry-error" fails its first entry with an error. */
int gdn_mpi_test_fault(int rank, const char *stage);
void gdn_mpi_test_die(int rank, const char *stage);

/* Rank 0's side of a distributed sweep: text (NUL-terminated, malloc'd;
 * free()) from rank `from` / to rank `to`, tag = the grid entry. */
int gdn_mpi_send_text(const char *text, int to, int tag, gdn_error *e);
int gdn_mpi_recv_text(char **text, int from, int tag, gdn_error *e);
/* Ends every rank with exit status `status` (MPI_Abort). */
void gdn_mpi_abort(int status);

/* The oracle dealt across ranks (parity/run/parity_dist_oracle.c).  Every rank
 * calls each of these with the same sizes; values travel as their bits
 * (MPI_DOUBLE, MPI_INT64_T, MPI_BYTE).  A count beyond MPI's int is
 * GDN_ERR_INPUT naming it. */
/* all[r n + i] = rank r's mine[i]. */
int gdn_mpi_allgather_f64(const double *mine, size_t n, double *all, gdn_error *e);
int gdn_mpi_allgather_i64(const int64_t *mine, size_t n, int64_t *all, gdn_error *e);
int gdn_mpi_bcast_bytes(void *buf, size_t n, int root, gdn_error *e);
/* n bytes (at most INT_MAX: the caller sends larger buffers in pieces)
 * from this rank to rank `to`, and their receipt from rank `from`, under
 * `tag`: a regen's group dealt to its owner (parity/run/parity_regen.c). */
int gdn_mpi_send_bytes(const void *buf, size_t n, int to, int tag, gdn_error *e);
int gdn_mpi_recv_bytes(void *buf, size_t n, int from, int tag, gdn_error *e);
/* Rank root's o[b, :, j, :] and ht[b, j] into every rank's `out` (same
 * shape everywhere), in place. */
int gdn_mpi_bcast_head(gdn_outputs *out, int64_t b, int64_t j, int root, gdn_error *e);
/* Rank root's gradients of VJP item (b, key head kh) (oracle_part.h:
 * dq, dk of kh; dv, dg, dbeta, dh0 of its Hv / Hk value heads) into every
 * rank's `g`, in place. */
int gdn_mpi_bcast_grads_item(gdn_grads *g, int64_t b, int64_t kh, int root, gdn_error *e);

#endif
