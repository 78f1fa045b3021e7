/* parity_dist: gdn-parity under mpirun (built with -Dmpi; without MPI every
 * function here is the one-process case: rank 0 of 1, nothing to send).
 *
 * Two uses of the ranks (cli-contract.md):
 *   --backend mpi   every rank runs the same case table; the subject row
 *                   parity_subject_mpi ("affine-prefix-mpi") is the
 *                   affine-prefix computed with the ranks as its devices
 *                   (gdn_mpi_affine_prefix), judged by the affine-prefix
 *                   rules next to the simulated one; D must be the world size.
 *   sweep           grid entry i runs on rank i mod N into a part document;
 *                   rank 0 receives the parts in entry order and merges them
 *                   (parity_doc_merge), so its results document is the
 *                   single-process one, byte for byte with --reproducible.
 * Only rank 0 prints the table and writes files; the other ranks' console
 * goes nowhere.  A rank's error ends every rank (parity_dist_abort).
 */
#ifndef PARITY_DIST_H
#define PARITY_DIST_H

#include "gdn_error.h"
#include "oracle.h"
#include "oracle_part.h"
#include "parity_doc.h"
#include "parity_subject.h"

/* MPI_Init when started by mpirun (else nothing). */
int parity_dist_start(int *argc, char ***argv, gdn_error *e);
void parity_dist_end(void);
int parity_dist_rank(void);
int parity_dist_size(void);
/* Several ranks: end them all with `status` (does not return). */
void parity_dist_abort(int status);
/* Whether an error came from one rank alone (a sweep entry's part), so
 * the others must be ended rather than left to finish. */
int parity_dist_diverged(void);
/* Whether --backend mpi can run here (built with MPI). */
int parity_dist_have_mpi(void);

/* NULL without MPI. */
extern const parity_subject_methods *const parity_subject_mpi;

/* Testing (GDN_TEST_MPI_DIE, mpi/gdn_mpi.h): at a sweep's entry on this
 * rank, "sweep" kills the rank, "entry-error" fails the entry (then 1). */
int parity_dist_test_entry(void);

/* A grid entry's part: the owner sends it (or its error) to rank 0. */
int parity_dist_send_part(const parity_doc *part, int entry, const gdn_error *failed, gdn_error *e);
/* Rank 0: the part of entry `entry` from rank `from`; an error the rank
 * sent comes back as that error, prefixed with the rank. */
int parity_dist_recv_part(parity_doc *part, int from, int entry, gdn_error *e);

/* The oracle's forward (oracle_run_certified, oracle_run_dd), dealt across
 * the ranks when every rank runs the same case (parity_dist_set_collective
 * on, more than one rank): head b Hv + j on rank (b Hv + j) mod N, the
 * certificate from the merged tallies, every head broadcast from its owner
 * (parity_dist_oracle.c).  Outputs, certificate and errors are the
 * one-process run's, bit for bit and word for word, on every rank.
 * Otherwise (or built without MPI) the oracle runs here, whole.
 * Collective: when dealing, every rank must call it with the same inputs. */
int parity_dist_oracle_mpfr(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out,
                            oracle_certificate *cert, gdn_error *e);
int parity_dist_oracle_dd(const gdn_inputs *in, const oracle_dd_config *cfg, gdn_outputs *out,
                          oracle_dd_certificate *cert, gdn_error *e);
/* The VJP (--grad: oracle_vjp_certified, oracle_vjp_dd) dealt likewise by
 * items (b, key head): item b Hk + kh on rank (b Hk + kh) mod N. */
int parity_dist_oracle_vjp(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_config *cfg,
                           gdn_grads *out, oracle_vjp_certificate *cert, gdn_error *e);
int parity_dist_oracle_vjp_dd(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_dd_config *cfg,
                              gdn_grads *out, oracle_vjp_dd_certificate *cert, gdn_error *e);
/* Testing (GDN_TEST_MPI_DIE=R:stage): whether it names this rank and
 * `stage`; 0 without MPI.  A streamed run's rank R > 0 computes the next
 * group's oracle ("stream-oracle") or kernels ("stream-deal") in place of
 * its own group's (the tests must catch both). */
int parity_dist_test_fault(const char *stage);
/* n bytes from rank `root` into buf on every rank (in pieces under 2^31
 * bytes); one process: nothing.  Collective. */
int parity_dist_bcast(void *buf, size_t n, int root, gdn_error *e);
/* n bytes from this rank to rank `to` / from rank `from` into buf (in
 * pieces under 2^31 bytes), messages between two ranks arriving in the
 * order sent; one process: GDN_ERR_INTERNAL (nobody to send to). */
int parity_dist_send(const void *buf, size_t n, int to, gdn_error *e);
int parity_dist_recv(void *buf, size_t n, int from, gdn_error *e);

/* On: the commands where every rank runs the same cases (a single case,
 * check); off (the default): a sweep, whose entries run on one rank each.
 * Testing (GDN_TEST_MPI_DIE): "oracle" kills rank R after its heads,
 * before the exchange; "oracle-deal" makes rank R compute rank R + 1's
 * heads instead of its own. */
void parity_dist_set_collective(int on);
/* Whether several ranks run the same case now (set_collective on). */
int parity_dist_collective(void);

#endif
