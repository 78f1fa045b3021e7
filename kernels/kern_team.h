/* kern_team: what the threads of a team share while they scan one head
 * together (kern_chunk_tmpl.h, kchunk_scan_team).
 *
 * The only value a team combines is a word of zero-part flags (kern_mm.h:
 * which bf16 parts of a split are not all zero), OR-ed over the column
 * blocks of one matrix so that every thread takes the decision a single
 * thread takes for the whole matrix.  OR is exact and order-free, so the
 * result does not depend on the team size.
 *
 * The exchange is point to point, not a barrier: each thread publishes its
 * block's flags tagged with the exchange's sequence number, and waits for
 * the others' only when its own block leaves a part's bit unset (then the
 * whole matrix may or may not have that part).  When every part is already
 * present in its own block -- the usual case -- the OR is known to be all
 * of them and the thread goes on.  A thread can run at most one group of
 * chunks (2 exchanges per chunk, at most nt chunks: kchunk_scan_team's
 * barrier per group) ahead of another, so each thread keeps its last
 * KERN_TEAM_RING(nt) = 2 nt words and a reader always finds the word it
 * waits for, or an older one. */
#ifndef KERN_TEAM_H
#define KERN_TEAM_H

#include <sched.h>
#include <stdint.h>

#define KERN_TEAM_RING(nt) (2 * (uint64_t)(nt))

typedef struct kern_team_sync {
  int tid, nt;     /* this thread, the team's size (the OpenMP team) */
  uint64_t *words; /* nt x KERN_TEAM_RING(nt): (sequence << 32) | flags */
  uint64_t seq;    /* exchanges so far (the same sequence on every thread) */
} kern_team_sync;

/* Every thread of the team calls this at the same point of the same
 * sequence with its block's flags; each gets the OR over the blocks.
 * `full`: the bits of every part the mode has.  ts == NULL: a thread alone,
 * the flags unchanged. */
static inline unsigned kern_team_or(kern_team_sync *ts, unsigned nz, unsigned full) {
  if (!ts) return nz;
  const uint64_t ring = KERN_TEAM_RING(ts->nt), seq = ++ts->seq;
  __atomic_store_n(&ts->words[(uint64_t)ts->tid * ring + seq % ring], (seq << 32) | nz,
                   __ATOMIC_RELEASE);
  if ((nz & full) == full) return nz;
  for (int u = 0; u < ts->nt; u++) {
    if (u == ts->tid) continue;
    const uint64_t *w = &ts->words[(uint64_t)u * ring + seq % ring];
    uint64_t v;
    for (long spin = 0; ((v = __atomic_load_n(w, __ATOMIC_ACQUIRE)) >> 32) != seq; spin++) {
      if (spin > 2000) sched_yield(); /* the other thread may be waiting for a core */
#if defined(__x86_64__) || defined(__i386__)
      else
        __builtin_ia32_pause();
#endif
    }
    nz |= (unsigned)(v & 0xffffffffu);
  }
  return nz;
}

#endif
