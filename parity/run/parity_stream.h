/* parity_stream: a run split into head groups, planned against --max-bytes.
 *
 * Value heads are independent (value head j reads key head j / r, r = Hv /
 * Hk), so a case can be produced one head group at a time: key heads
 * [k0, k1) with their value heads [k0 r, k1 r).  The plan chooses how many
 * key heads a group holds: the whole shape when it fits (no streaming),
 * else as few groups as fit (those of the largest fitting size), the heads
 * spread evenly over them.  A group's peak is counted as
 * parity_budget counts a whole run (its dominant terms): the group's
 * inputs, n_outputs output sets of the group, and the largest kernel
 * scratch any configuration of the sweep needs on the group's shape; the
 * groups run one after another, so one group's peak is the run's.
 *
 * Besides the group, the peak counts what the streamed run holds for the
 * whole run (parity_stream_run_bytes: the seams' exact sums, the
 * measurements' working memory, the worker threads), the reference's
 * working set when an oracle runs (PARITY_STREAM_MPFR / _DD), and with
 * PARITY_STREAM_RESIDENT the process's resident memory when the plan is
 * made (its code, libraries and what it already holds; under mpirun, when
 * every rank runs the case, rank 0's, broadcast: collective, so the ranks'
 * plans agree), so that the run's peak RSS, not only its heap, stays within
 * --max-bytes.
 *
 * The last group may be short (Hk not a multiple of the group size).  With
 * several ranks (MPI) the groups are dealt round robin: group i on rank
 * i mod n_ranks, so each rank's share differs by at most one group.
 */
#ifndef PARITY_STREAM_H
#define PARITY_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "gdn_error.h"
#include "gdn_shape.h"
#include "parity_sweep.h"

typedef struct parity_stream_plan {
  gdn_shape whole;    /* the run's shape */
  int64_t group;      /* key heads per group (whole.Hk: not streamed) */
  int64_t n_groups;   /* ceil(Hk / group) */
  uint64_t peak;      /* the bytes one (full-size) group holds at once */
  uint64_t whole_bytes; /* the same for the whole shape */
  uint64_t max_bytes; /* the budget planned against (0: none) */
  uint64_t resident;  /* the process's resident bytes counted in peak (PARITY_STREAM_RESIDENT; else 0) */
  int forced;         /* 1: the group size was asked for, not chosen */
} parity_stream_plan;

/* flags of parity_stream_bytes and parity_stream_plan_make (1 and 0 in the
 * with_h0 position keep their meaning): the inputs have an initial state;
 * the run judges gradients (--grad: besides the forward's inputs, output
 * sets and scratch, three gradient sets of the inputs with h0 -- binary64,
 * twice the input bytes each -- and the cotangents, half an output set: the
 * bytes --grad's own check counts, so a group the plan chooses is never
 * refused by it, and a larger budget never refuses what a smaller one ran). */
enum {
  PARITY_STREAM_H0 = 1,
  PARITY_STREAM_GRADS = 2,
  PARITY_STREAM_MPFR = 4,     /* the MPFR oracle runs: its working set, the reference, the error model */
  PARITY_STREAM_DD = 8,       /* the dd oracle runs: the same */
  PARITY_STREAM_RESIDENT = 16 /* count the process's resident memory at plan time (the command line) */
};
/* With PARITY_STREAM_MPFR or _DD: the oracle's working precision in bits
 * (its numbers' limbs; 0: the default 128). */
#define PARITY_STREAM_BITS(bits) ((int)(bits) << 8)

/* Each worker thread's stack and malloc arena beyond the first; and what a
 * streamed run's peak RSS showed above its counted parts, measured (the
 * results document, HDF5's and MPFR's caches, malloc's slack): see
 * docs/options.md (--max-bytes). */
#define PARITY_STREAM_THREAD (1024u * 1024u)
#define PARITY_STREAM_SLACK (2048u * 1024u)

/* The process's resident bytes now (/proc/self/statm; else its peak so
 * far from getrusage; 0 when neither answers). */
uint64_t parity_stream_resident(void);

/* The --max-bytes a refusal names as the smallest that runs, for a run
 * counted at need bytes of which resident were the process's own: need
 * plus room for that own memory, which moves from run to run (arguments,
 * environment, libraries' caches; some 300 KiB measured under ASan), 1 MiB
 * and a sixteenth of resident, rounded up to a whole MiB, so the figure
 * named runs when given back. */
uint64_t parity_stream_named_bytes(uint64_t need, uint64_t resident);

/* What a streamed run of shape whole in n_groups groups holds for the whole
 * run beside everything else: the seams' exact sums, the worker threads. */
uint64_t parity_stream_run_bytes(const gdn_shape *whole, int64_t n_groups, const parity_sweep_opts *o);

/* What its measurements hold (after the groups' production, which has let
 * go of their data; beside the read-back buffers): every pair of one
 * tensor's streamed metrics at once (parity_mstream_bytes, with the error
 * model's statistics when a reference is computed), and the subjects'
 * records; flags as parity_stream_bytes'. */
uint64_t parity_stream_measure_bytes(const gdn_shape *whole, int flags, const parity_sweep_opts *o);

/* The bytes a run on shape s holds at once (above); with_h0: the flags. */
int parity_stream_bytes(const gdn_shape *s, int with_h0, int n_outputs, const parity_sweep_opts *o,
                        uint64_t *bytes, gdn_error *e);

/* Plans the run of shape s.  force_group > 0 asks for that many key heads
 * per group (the tests' way to stream a shape that fits whole; it must
 * still fit); 0 lets the budget choose.  GDN_ERR_INPUT when even one key
 * head's group is over max_bytes (the message names its peak) or
 * force_group is above Hk. */
int parity_stream_plan_make(const gdn_shape *s, int with_h0, int n_outputs, const parity_sweep_opts *o,
                            uint64_t max_bytes, int64_t force_group, parity_stream_plan *p, gdn_error *e);

/* The one key-head split of every streamed plan (the sweep's, a case's, a
 * --recurrence run's and check's).  parity_stream_even: groups of at most
 * g of Hk key heads evened out, as many groups as g needs, each as large as
 * that count needs (16 in groups of at most 5: 4 groups of 4, not 5 5 5 1),
 * a smaller peak, and ranks that share the groups share the work.
 * parity_stream_share: the group size that deals Hk key heads over
 * n_ranks ranks, at most one group each, ceil(Hk / n_ranks) (Hk where
 * n_ranks <= 1); a plan under mpirun whose groups are larger is planned
 * again at this size, so that no rank waits while another runs two. */
int64_t parity_stream_even(int64_t Hk, int64_t g);
int64_t parity_stream_share(int64_t Hk, int n_ranks);

/* The peak of a group of g key heads, the caller's own count. */
typedef int (*parity_stream_peak_fn)(void *ctx, int64_t g, uint64_t *peak, gdn_error *e);

/* The groups of a plan whose whole, whole_bytes, max_bytes and forced are
 * set, by that split: force key heads a group when forced, else the whole
 * run, or where whole_bytes is over max_bytes the largest size whose peak
 * fits, evened out; p->peak that size's; under n_ranks > 1 ranks, unless
 * forced, a size above the ranks' share planned again at the share.
 * *fits 0: not even the group chosen fits max_bytes (the caller refuses
 * with its own message). */
int parity_stream_plan_groups(parity_stream_plan *p, int64_t force, int n_ranks, parity_stream_peak_fn peak,
                              void *ctx, int *fits, gdn_error *e);

/* Group i's key heads [*k0, *k1) and its shape (B, T, k1 - k0, (k1 - k0) r,
 * Dk, Dv). */
void parity_stream_group(const parity_stream_plan *p, int64_t i, int64_t *k0, int64_t *k1, gdn_shape *gs);

/* The rank that runs group i of n_ranks (round robin), and how many groups
 * rank `rank` runs. */
int parity_stream_owner(int64_t i, int n_ranks);
int64_t parity_stream_rank_groups(const parity_stream_plan *p, int rank, int n_ranks);

/* The up-front estimate, e.g. "streamed by head group: 4 key heads (8
 * value heads) per group, 4 groups; expected peak 8.05 GiB of the 12 GiB
 * limit (the whole run at once: 32.1 GiB)", or the whole run's line when
 * not streamed. */
void parity_stream_describe(const parity_stream_plan *p, char *buf, size_t n);

#endif
