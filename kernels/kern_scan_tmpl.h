/* Template (see kern_real.h): kern_scan in F.
 *
 * Items: the B x Hv (batch, value head) pairs, independent.  While there
 * are at least as many items left as threads, each thread scans whole heads
 * (dynamic schedule); the remaining B Hv mod threads heads (all of them when
 * B Hv < threads: the single-head 1M-token case) are scanned one after the
 * other by all threads as a team (kchunk_scan_team: each chunk's prep once,
 * by one thread; the bodies split over column blocks of Dv).  Either way
 * every value is computed by the same operations in the same order, so the
 * result does not depend on the thread count or on which thread computed
 * what.
 *
 * Memory: per thread one kchunk, two kprep slots, one state h and one
 * column block of a team's state, allocated once; the team's zero-flag
 * words.  Each thread runs in scan_thread, not
 * inlined, inside its flush-to-zero environment (kern_num.h). */
#include "kern_chunk_tmpl.h"
#include "kern_team_tmpl.h"

typedef struct KR(scan_job) {
  const gdn_inputs *in;
  const kern_config *cfg;
  const kern_num *num;
  gdn_outputs *out;
  KR(kteam) team;
  size_t per, ce, pe;
  int nt;
} KR(scan_job);

static __attribute__((noinline)) void KR(scan_thread)(const KR(scan_job) *j) {
  const gdn_inputs *in = j->in;
  const gdn_shape *s = &in->shape;
  const kern_num *num = j->num;
  gdn_outputs *out = j->out;
  const int64_t C = j->cfg->chunk, N = gdn_shape_chunks(s, C), items = s->B * s->Hv;
  /* the team OpenMP gave (at most the nt the scratch was allocated for) */
  const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
  kreal *base = j->team.mem + (size_t)tid * j->per;
  KR(kchunk) c;
  KR(kchunk_bind)(&c, base, in, num, C, out->dtype == GDN_DTYPE_BF16);
  KR(kprep) *mine = &j->team.preps[2 * tid];
  KR(kprep_bind)(&mine[0], base + j->ce, C, s->Dk, s->Dv, num->matmul);
  KR(kprep_bind)(&mine[1], base + j->ce + j->pe, C, s->Dk, s->Dv, num->matmul);
  kreal *h = base + j->ce + 2 * j->pe; /* the state of a head scanned alone */
  kreal *hb = h + KR(rows_pad)((size_t)s->Dk * (size_t)s->Dv); /* a team member's block */
  const int64_t solo = items / nt * nt; /* heads scanned by one thread each */
#pragma omp for schedule(dynamic, 1)
  for (int64_t it = 0; it < solo; it++) {
    KR(kchunk_head)(&c, it / s->Hv, it % s->Hv);
    KR(kchunk_h0)(&c, h);
    KR(kchunk_scan)(&c, mine, 0, N, h, out);
    KR(kchunk_store_state)(&c, h, gdn_outputs_ht(out, c.b, c.hv));
  }
  /* (the loop's barrier: every thread's slots are bound before the team uses them) */
  kern_team_sync ts = {tid, nt, j->team.slots, 0};
  kreal *th = j->team.mem + j->ce + 2 * j->pe; /* the team's state: thread 0's h */
  for (int64_t it = solo; it < items; it++) {
    KR(kchunk_head)(&c, it / s->Hv, it % s->Hv);
    if (tid == 0) KR(kchunk_h0)(&c, th);
#pragma omp barrier
    KR(kchunk_scan_team)(&c, j->team.preps, &ts, 0, N, th, hb, out);
    if (tid == 0) KR(kchunk_store_state)(&c, th, gdn_outputs_ht(out, c.b, c.hv));
#pragma omp barrier
  }
}

/* Elements of one thread's scratch (saturating). */
static size_t KR(scan_per)(const gdn_shape *s, int64_t C, kern_matmul mm) {
  const size_t ce = KR(kchunk_elems)(C, s->Dk, s->Dv, mm);
  const size_t pe = KR(kprep_elems)(C, s->Dk, s->Dv, mm);
  size_t per = kern_size_add(ce, kern_size_mul(2, pe));
  return kern_size_add(per, kern_size_mul(2, KR(rows_pad)((size_t)s->Dk * (size_t)s->Dv)));
}

/* Every byte scan_run allocates besides the outputs, for nt threads. */
static size_t KR(scan_scratch)(const gdn_shape *s, int64_t C, kern_matmul mm, int nt) {
  return KR(kchunk_team_bytes)(nt, KR(scan_per)(s, C, mm));
}

static int KR(scan_run)(const gdn_inputs *in, const kern_config *cfg, const kern_num *num,
                        gdn_outputs *out, gdn_error *e) {
  const gdn_shape *s = &in->shape;
  const int64_t C = cfg->chunk;
  const int nt = kern_threads(s);
  const size_t ce = KR(kchunk_elems)(C, s->Dk, s->Dv, num->matmul);
  const size_t pe = KR(kprep_elems)(C, s->Dk, s->Dv, num->matmul);
  const size_t per = KR(scan_per)(s, C, num->matmul);
  KR(kteam) team;
  if (KR(kchunk_team_alloc)(nt, per, "kern_scan", &team, e)) return GDN_ERR_NOMEM;
  KR(scan_job) job = {in, cfg, num, out, team, per, ce, pe, nt};
#pragma omp parallel num_threads(nt)
  {
    const unsigned env = kern_fpenv_enter(num);
    KR(scan_thread)(&job);
    kern_fpenv_leave(num, env);
  }
  KR(kchunk_team_free)(&team);
  return GDN_OK;
}
