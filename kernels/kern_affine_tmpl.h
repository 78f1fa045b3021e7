/* Template (see kern_real.h): kern_affine_prefix in F.
 *
 * Device r's chunks are those of its piece (kern_affine_piece: its T/D
 * tokens chunked from its own first token and padded at its end, or its
 * array_split range of the sequence's chunks); the fold and the replay of
 * device r read exactly those chunks (kchunk_piece), so with token sharding
 * the zero padding sits at every device's end, as under shard_map.
 *
 * Heads are processed in batches of P = min(B x Hv, threads) heads.  For one
 * batch, three phases, each a parallel loop over independent items:
 *   fold     (head, device) items, D >= 2 only: device r folds its shard's
 *            chunks from (I, 0): (A_loc, B_loc) <- (A_n, B_n) o (A_loc, B_loc)
 *            chunk by chunk, recomputing each chunk's U, W from the inputs
 *            (kchunk load, wy, kt, affine; kern_affine_compose).  It holds
 *            its one (A_loc, B_loc) in the batch's gather buffer and the
 *            chunk's (A_n, B_n) in its thread's scratch.
 *   prefix   head items, D >= 2 only: the inclusive prefix over the head's D
 *            gathered pairs in place (kern_prefix_inclusive, cfg->prefix:
 *            sequential, jax.lax.associative_scan's tree or Hillis-Steele),
 *            then ht = A_cum[D-1] h0 + B_cum[D-1] (kern_affine_apply).
 *   replay   (head, device) items: h_in = h0 for device 0, else
 *            A_cum[r-1] h0 + B_cum[r-1]; then exactly kern_scan's loop
 *            (kchunk_scan) over the shard from h_in, storing the shard's o
 *            rows.  For D = 1 the carry after the last chunk is ht, so D = 1
 *            is kern_scan bit for bit.  As in kern_scan, the items beyond
 *            the last whole round of `threads` (all of them when there are
 *            fewer: one head, D = 1) are replayed one after the other by all
 *            threads as a team (kchunk_scan_team); same values.
 * Every product is kern_mm in the config's matmul mode (compositions and
 * applies included).  Each thread runs the three phases in affine_thread,
 * not inlined, inside its flush-to-zero environment (kern_num.h).
 * The fold composes into the prefix work's pair and its own pair
 * alternately (no copy per chunk; one copy at the end when the result is
 * not already in the gather buffer).
 * Memory held: the gather buffer P x D x (Dk^2 + Dk Dv) and per thread one
 * kchunk, two kprep slots, 3 Dk x Dv + Dk^2 elements and the prefix work (a
 * pair and the splits of a composition), so O(threads x (D (Dk^2 + Dk Dv) +
 * chunk temporaries)), independent of B, Hv and T. */
#include "kern_chunk_tmpl.h"
#include "kern_team_tmpl.h"

typedef struct KR(affine_job) {
  const gdn_inputs *in;
  const kern_config *cfg;
  const kern_num *num;
  gdn_outputs *out;
  kern_affine_seams *sm;
  KR(kteam) team;
  kreal *pairs;
  size_t per, ce, pe, na, nb, npair;
  int64_t h_begin, nh;
  /* ranks as devices (kern_affine_prefix_rank), else NULL */
  const kern_affine_comm *comm;
  kern_affine_exchange *x;
  int *xrc;
  gdn_error *e;
} KR(affine_job);

/* The piece device r folds: kern_affine_piece's, except that the
 * shard-off-by-one mutant starts the fold of every device r >= 1 one token
 * (chunk sharding: one chunk) early, so that position is folded twice, and
 * carry-late ends the fold of every device r < D - 1 one token (chunk) late,
 * inside the next device's piece. */
static void KR(affine_fold_piece)(const kern_config *cfg, int64_t T, int64_t r, kern_piece *pc) {
  kern_affine_piece(cfg, T, r, pc);
  const int64_t C = cfg->chunk;
  if (cfg->mutant == KERN_MUTANT_CARRY_LATE && r + 1 < cfg->devices) {
    if (cfg->shard == KERN_SHARD_TOKENS) {
      pc->t1++;
      pc->count = (pc->t1 - pc->base + C - 1) / C;
    } else {
      pc->count++;
      pc->t1 = (pc->first + pc->count) * C < T ? (pc->first + pc->count) * C : T;
    }
    return;
  }
  if (cfg->mutant != KERN_MUTANT_SHARD_OFF_BY_ONE || r == 0) return;
  if (cfg->shard == KERN_SHARD_TOKENS) {
    pc->base = pc->t0 = pc->t0 - 1;
    pc->count = (pc->t1 - pc->base + C - 1) / C;
  } else {
    pc->first--;
    pc->count++;
    pc->t0 = pc->first * C;
  }
}

/* Bits for kern_prefix_inclusive from the mutant (kern_prefix.h). */
static int KR(affine_prefix_bits)(kern_mutant m) {
  return m == KERN_MUTANT_COMPOSE_ORDER ? KERN_PREFIX_BROKEN_ORDER
         : m == KERN_MUTANT_HS_REVERSED    ? KERN_PREFIX_BROKEN_ROUNDS
         : m == KERN_MUTANT_HS_TWO_ROUNDS  ? KERN_PREFIX_BROKEN_TWO_ROUNDS
                                           : 0;
}

/* h = the state device r starts its replay from (h0: the head's initial
 * state, zeros when there is none): h0 for r = 0, else A_cum[r-1] h0 +
 * B_cum[r-1] (Ah, Bh: the head's inclusive prefix); then the mutant's
 * change, chosen from one table of cases. */
static void KR(affine_h_in)(const kern_config *cfg, kern_matmul mm, const gdn_inputs *in,
                            int64_t Dk, int64_t Dv,
                            const kreal *Ah, const kreal *Bh, int64_t r, const kreal *h0,
                            kreal *h, kreal *aw) {
  const size_t na = (size_t)(Dk * Dk), nb = (size_t)(Dk * Dv);
  const kern_mutant m = cfg->mutant;
  int64_t src = r - 1; /* the prefix entry device r starts from; -1: h0 itself */
  if (m == KERN_MUTANT_PREFIX_INCLUSIVE && cfg->devices >= 2) src = r;
  if (src < 0)
    memcpy(h, h0, nb * sizeof *h);
  else
    KR(kern_affine_apply)(mm, Dk, Dv, Ah + (size_t)src * na, Bh + (size_t)src * nb,
                          in->h0 && m != KERN_MUTANT_H0_FIRST_ONLY ? h0 : NULL, h, aw);
  switch (m) {
  case KERN_MUTANT_H0_IGNORED:
    if (r == 0) memset(h, 0, nb * sizeof *h);
    break;
  case KERN_MUTANT_CARRY_ZERO:
    if (r >= 1) memset(h, 0, nb * sizeof *h);
    break;
  case KERN_MUTANT_H0_EVERY:
    if (r >= 1)
      for (size_t x = 0; x < nb; x++) h[x] += h0[x];
    break;
  case KERN_MUTANT_BF16_SEAM:
    if (r >= 1)
      for (size_t x = 0; x < nb; x++) h[x] = (kreal)gdn_bf16_round((float)h[x]);
    break;
  default: break;
  }
}

/* bf16-cast-added: the folded pair (A, B) rounded to bfloat16 (nearest,
 * ties to even, gdn_bf16_round) as a cast for the all-gather would; the
 * prefix then composes the rounded pairs. */
static void KR(affine_pair_bf16)(kreal *A, size_t na, kreal *B, size_t nb) {
  for (size_t x = 0; x < na; x++) A[x] = (kreal)gdn_bf16_round((float)A[x]);
  for (size_t x = 0; x < nb; x++) B[x] = (kreal)gdn_bf16_round((float)B[x]);
}

/* After the fold of one batch: the driver's exchange, on one thread (the
 * master: an MPI initialised FUNNELED suffices), between two barriers; every
 * thread then sees its verdict. */
static int KR(affine_exchange)(const KR(affine_job) *j) {
#pragma omp barrier
#pragma omp master
  {
    kern_affine_exchange *x = j->x;
    x->pairs = j->pairs;
    x->nh = j->nh;
    x->prefixed = 0;
    *j->xrc = j->comm->exchange(j->comm->ctx, x, j->e);
  }
#pragma omp barrier
  return *j->xrc;
}

/* One thread's state in affine_thread: its chunk engine, kprep slots and
 * the rows carved from its scratch (h, h0, An, Bn, the prefix work). */
typedef struct KR(affine_local) {
  const KR(affine_job) *j;
  KR(kchunk) c;
  kern_num fold_num; /* the fold's numerics (bf16-cast-missing drops U, W's rounding) */
  KR(kprep) *mine;
  kreal *h, *h0, *An, *Bn, *tA, *tB, *aw, *pw;
  size_t off_h;     /* where h starts in a thread's scratch (the team uses thread 0's) */
  int64_t dev0, nd; /* the devices this process computes: all D, or the rank's one */
  int seam_decay;
  /* ht: -1 from the composition A_cum[D-1] h0 + B_cum[D-1]; else the
   * replay carry of this device (final-from-replay: D - 1, final-device-0: 0) */
  int64_t final_from;
  int ht_h0; /* the composition's ht applies h0 (h0-first-only drops it) */
} KR(affine_local);

static void KR(affine_local_bind)(KR(affine_local) *l, const KR(affine_job) *j, int tid) {
  const gdn_shape *s = &j->in->shape;
  const kern_config *cfg = j->cfg;
  const kern_num *num = j->num;
  const int64_t C = cfg->chunk, Dk = s->Dk, Dv = s->Dv;
  const kern_matmul mm = num->matmul;
  kreal *base = j->team.mem + (size_t)tid * j->per;
  l->j = j;
  KR(kchunk_bind)(&l->c, base, j->in, num, C, j->out->dtype == GDN_DTYPE_BF16);
  l->c.mutant = cfg->mutant;
  if (cfg->mutant == KERN_MUTANT_SCALE_TWICE) l->c.scale = l->c.scale * l->c.scale;
  if (cfg->mutant == KERN_MUTANT_SCALE_NONE) l->c.scale = 1;
  l->seam_decay = cfg->mutant == KERN_MUTANT_SEAM_DECAY;
  l->final_from = cfg->mutant == KERN_MUTANT_FINAL_FROM_REPLAY ? cfg->devices - 1
                 : cfg->mutant == KERN_MUTANT_FINAL_DEVICE_0    ? 0
                                                                : -1;
  l->ht_h0 = j->in->h0 && cfg->mutant != KERN_MUTANT_H0_FIRST_ONLY;
  /* bf16-cast-missing: the fold reads its chunks through a copy of the
   * numerics without the U, W rounding point; the replay keeps num */
  l->fold_num = *num;
  if (cfg->mutant == KERN_MUTANT_BF16_CAST_MISSING) l->fold_num.round_mask &= ~(unsigned)KERN_RP_UW;
  l->mine = &j->team.preps[2 * tid];
  KR(kprep_bind)(&l->mine[0], base + j->ce, C, Dk, Dv, mm);
  KR(kprep_bind)(&l->mine[1], base + j->ce + j->pe, C, Dk, Dv, mm);
  l->off_h = j->ce + 2 * j->pe; /* h, h0, An, Bn, then the prefix work */
  kreal *p = base + l->off_h;
  l->h = KR(rows_carve)(&p, j->nb), l->h0 = KR(rows_carve)(&p, j->nb);
  l->An = KR(rows_carve)(&p, j->na), l->Bn = KR(rows_carve)(&p, j->nb);
  /* the prefix's work (kern_prefix_work_elems): a pair tA, tB, then the
   * composition's work aw (kern_affine_work_elems) */
  l->pw = p;
  l->tA = l->pw, l->tB = l->tA + KR(rows_pad)(j->na), l->aw = l->tB + KR(rows_pad)(j->nb);
  l->dev0 = j->comm ? j->comm->self : 0, l->nd = j->comm ? 1 : cfg->devices;
}

/* Fold: each (head, device) item composes its piece's chunks into one pair
 * (A, B), written to the gather buffer. */
static void KR(affine_fold_all)(KR(affine_local) *l) {
  const KR(affine_job) *j = l->j;
  const gdn_shape *s = &j->in->shape;
  const kern_config *cfg = j->cfg;
  const int64_t D = cfg->devices, Dk = s->Dk, Dv = s->Dv, nd = l->nd;
  const size_t na = j->na, nb = j->nb, npair = j->npair;
  const kern_matmul mm = j->num->matmul;
  KR(kchunk) *c = &l->c;
  c->num = &l->fold_num;
#pragma omp for schedule(dynamic, 1)
  for (int64_t it = 0; it < j->nh * nd; it++) {
    const int64_t hb = it / nd, r = l->dev0 + it % nd, head = j->h_begin + hb;
    kern_piece pc;
    KR(affine_fold_piece)(cfg, s->T, r, &pc);
    const int64_t first = pc.first, cnt = pc.count;
    KR(kchunk_head)(c, head / s->Hv, head % s->Hv);
    KR(kchunk_piece)(c, pc.base, pc.t1);
    c->seam_chunk = l->seam_decay && r >= 1 ? first : -1;
    kreal *Al = j->pairs + (size_t)hb * D * npair + (size_t)r * na;
    kreal *Bl = j->pairs + (size_t)hb * D * npair + (size_t)D * na + (size_t)r * nb;
    for (size_t x = 0; x < na; x++) Al[x] = 0;
    for (int64_t d = 0; d < Dk; d++) Al[d * Dk + d] = 1;
    for (size_t x = 0; x < nb; x++) Bl[x] = 0;
    kreal *cA = Al, *cB = Bl, *xA = l->tA, *xB = l->tB; /* current, and the other pair */
    for (int64_t n = first; n < first + cnt; n++) {
      KR(kchunk_load)(c, n);
      c->pf = n + 1 < first + cnt ? n + 1 : -1;
      KR(kchunk_wy)(c, &l->mine[0], 1);
      KR(kchunk_kt)(c, &l->mine[0]);
      KR(kchunk_affine)(c, &l->mine[0], l->An, l->Bn);
      KR(kern_affine_compose)(mm, Dk, Dv, l->An, l->Bn, cA, cB, xA, xB, l->aw);
      kreal *t = cA;
      cA = xA, xA = t;
      t = cB;
      cB = xB, xB = t;
    }
    if (cA != Al) {
      memcpy(Al, cA, na * sizeof *Al);
      memcpy(Bl, cB, nb * sizeof *Bl);
    }
    if (cfg->mutant == KERN_MUTANT_BF16_CAST_ADDED) KR(affine_pair_bf16)(Al, na, Bl, nb);
  }
  c->num = j->num;
}

/* Prefix: per head, the inclusive prefix of the D pairs (unless the ranks'
 * exchange did it) and the final state from the last pair. */
static void KR(affine_prefix_all)(KR(affine_local) *l) {
  const KR(affine_job) *j = l->j;
  const gdn_shape *s = &j->in->shape;
  const kern_config *cfg = j->cfg;
  const int64_t D = cfg->devices, Dk = s->Dk, Dv = s->Dv;
  const size_t na = j->na, nb = j->nb, npair = j->npair;
  const kern_matmul mm = j->num->matmul;
  KR(kchunk) *c = &l->c;
  const int prefixed = j->comm && j->x->prefixed;
#pragma omp for schedule(dynamic, 1)
  for (int64_t hb = 0; hb < j->nh; hb++) {
    const int64_t head = j->h_begin + hb;
    KR(kchunk_head)(c, head / s->Hv, head % s->Hv);
    kreal *Ah = j->pairs + (size_t)hb * D * npair, *Bh = Ah + (size_t)D * na;
    kern_prefix_stats st = {0, 0, NULL, 0};
    if (!prefixed)
      KR(kern_prefix_inclusive)(cfg->prefix, KR(affine_prefix_bits)(cfg->mutant), mm, D, Dk, Dv, Ah, Bh, l->pw, &st);
    if (j->sm && head == 0) {
      j->sm->prefix_compositions = st.compositions;
      j->sm->prefix_rounds = st.rounds;
    }
    if (l->final_from < 0) {
      KR(kchunk_h0)(c, l->h0);
      KR(kern_affine_apply)(mm, Dk, Dv, Ah + (size_t)(D - 1) * na, Bh + (size_t)(D - 1) * nb,
                            l->ht_h0 ? l->h0 : NULL, l->h, l->aw);
      KR(kchunk_store_state)(c, l->h, gdn_outputs_ht(j->out, c->b, c->hv));
    }
  }
}

/* Binds c to item it's head and piece; returns the piece. */
static kern_piece KR(affine_replay_item)(KR(affine_local) *l, int64_t it, int64_t *hb, int64_t *r) {
  const KR(affine_job) *j = l->j;
  const gdn_shape *s = &j->in->shape;
  *hb = it / l->nd, *r = l->dev0 + it % l->nd;
  const int64_t head = j->h_begin + *hb;
  kern_piece pc;
  kern_affine_piece(j->cfg, s->T, *r, &pc);
  KR(kchunk_head)(&l->c, head / s->Hv, head % s->Hv);
  KR(kchunk_piece)(&l->c, pc.base, pc.t1);
  l->c.seam_chunk = l->seam_decay && *r >= 1 ? pc.first : -1;
  return pc;
}

/* The incoming state h of item (hb, r) from the prefix (or h0), recorded
 * at its seam when asked. */
static void KR(affine_replay_h_in)(KR(affine_local) *l, int64_t hb, int64_t r, kreal *h) {
  const KR(affine_job) *j = l->j;
  const gdn_shape *s = &j->in->shape;
  const int64_t D = j->cfg->devices;
  KR(kchunk) *c = &l->c;
  KR(kchunk_h0)(c, l->h0);
  const kreal *Ah = j->pairs ? j->pairs + (size_t)hb * D * j->npair : NULL;
  KR(affine_h_in)(j->cfg, j->num->matmul, j->in, s->Dk, s->Dv, Ah, Ah ? Ah + (size_t)D * j->na : NULL, r,
                  l->h0, h, l->aw);
  if (j->sm) KR(kchunk_store_state)(c, h, kern_affine_seams_h_in(j->sm, c->b, c->hv, r));
}

/* After item (hb, r)'s replay: its outgoing state at the seam, and ht. */
static void KR(affine_replay_h_out)(KR(affine_local) *l, int64_t r, const kreal *h) {
  const KR(affine_job) *j = l->j;
  const int64_t D = j->cfg->devices;
  KR(kchunk) *c = &l->c;
  if (j->sm) KR(kchunk_store_state)(c, h, kern_affine_seams_h_out(j->sm, c->b, c->hv, r));
  if (D == 1 || r == l->final_from) KR(kchunk_store_state)(c, h, gdn_outputs_ht(j->out, c->b, c->hv));
}

/* Replay: every (head, device) item runs its piece from its incoming state;
 * whole rounds of items one per thread, the rest by the team on thread 0's
 * h (the loop's barrier: every slot is bound and every solo item done). */
static void KR(affine_replay_all)(KR(affine_local) *l, int tid, int nt) {
  const KR(affine_job) *j = l->j;
  const int64_t items = j->nh * l->nd, solo = items / nt * nt;
  int64_t hb, r;
#pragma omp for schedule(dynamic, 1)
  for (int64_t it = 0; it < solo; it++) {
    kern_piece pc = KR(affine_replay_item)(l, it, &hb, &r);
    KR(affine_replay_h_in)(l, hb, r, l->h);
    KR(kchunk_scan)(&l->c, l->mine, pc.first, pc.count, l->h, j->out);
    KR(affine_replay_h_out)(l, r, l->h);
  }
  kern_team_sync ts = {tid, nt, j->team.slots, 0};
  kreal *th = j->team.mem + l->off_h;
  for (int64_t it = solo; it < items; it++) {
    kern_piece pc = KR(affine_replay_item)(l, it, &hb, &r);
    if (tid == 0) KR(affine_replay_h_in)(l, hb, r, th);
#pragma omp barrier
    KR(kchunk_scan_team)(&l->c, j->team.preps, &ts, pc.first, pc.count, th, l->Bn, j->out); /* Bn: free here */
    if (tid == 0) KR(affine_replay_h_out)(l, r, th);
#pragma omp barrier
  }
}

/* One thread's share of one batch of heads: fold, prefix, replay. */
static __attribute__((noinline)) void KR(affine_thread)(const KR(affine_job) *j) {
  const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
  KR(affine_local) l;
  KR(affine_local_bind)(&l, j, tid);
  if (j->cfg->devices >= 2) {
    KR(affine_fold_all)(&l);
    if (j->comm && KR(affine_exchange)(j)) return;
    KR(affine_prefix_all)(&l);
  }
  KR(affine_replay_all)(&l, tid, nt);
}

/* Elements of one thread's scratch (saturating). */
static size_t KR(affine_per)(const gdn_shape *s, const kern_config *cfg, kern_matmul mm) {
  const int64_t C = cfg->chunk, D = cfg->devices, Dk = s->Dk, Dv = s->Dv;
  const size_t na = kern_size_mul((size_t)Dk, (size_t)Dk), nb = (size_t)(Dk * Dv);
  size_t per = kern_size_add(KR(kchunk_elems)(C, Dk, Dv, mm), kern_size_mul(2, KR(kprep_elems)(C, Dk, Dv, mm)));
  per = kern_size_add(per, kern_size_mul(3, KR(rows_pad)(nb)));
  per = kern_size_add(per, KR(rows_pad)(na));
  return kern_size_add(per, KR(kern_prefix_work_elems)(cfg->prefix, D, Dk, Dv, mm));
}

/* Every byte affine_run allocates besides the outputs and seams, for nt
 * threads. */
static size_t KR(affine_scratch)(const gdn_shape *s, const kern_config *cfg, kern_matmul mm, int nt) {
  const int64_t heads = s->B * s->Hv, P = heads < nt ? heads : nt, D = cfg->devices;
  const size_t npair = kern_size_add(kern_size_mul((size_t)s->Dk, (size_t)s->Dk), (size_t)(s->Dk * s->Dv));
  size_t b = KR(kchunk_team_bytes)(nt, KR(affine_per)(s, cfg, mm));
  if (D >= 2) b = kern_size_add(b, kern_size_mul(kern_size_mul((size_t)P * (size_t)D, npair), sizeof(kreal)));
  return b;
}

static int KR(affine_run)(const gdn_inputs *in, const kern_config *cfg, const kern_num *num,
                          const kern_affine_comm *comm, gdn_outputs *out,
                          kern_affine_seams *sm, gdn_error *e) {
  const gdn_shape *s = &in->shape;
  const int64_t C = cfg->chunk, D = cfg->devices;
  const int64_t Dk = s->Dk, Dv = s->Dv, heads = s->B * s->Hv;
  /* Dk x Dv fits (gdn_shape_validate); Dk x Dk need not: saturate */
  const size_t na = kern_size_mul((size_t)Dk, (size_t)Dk), nb = (size_t)(Dk * Dv);
  const size_t npair = kern_size_add(na, nb);
  const int nt = kern_threads(s);
  const int64_t P = heads < nt ? heads : nt;
  const size_t ce = KR(kchunk_elems)(C, Dk, Dv, num->matmul);
  const size_t pe = KR(kprep_elems)(C, Dk, Dv, num->matmul);
  const size_t per = KR(affine_per)(s, cfg, num->matmul);
  KR(kteam) team;
  if (KR(kchunk_team_alloc)(nt, per, "kern_affine_prefix", &team, e)) return GDN_ERR_NOMEM;
  kreal *pairs = NULL;
  if (D >= 2) {
    pairs = gdn_calloc(kern_size_mul((size_t)P * (size_t)D, npair), sizeof(kreal),
                       "kern_affine_prefix gathered (A, B) pairs", e);
    if (!pairs) {
      KR(kchunk_team_free)(&team);
      gdn_error_prefix(e, "kern_affine_prefix: ");
      return GDN_ERR_NOMEM;
    }
  }
  kern_affine_exchange x = {sizeof(kreal) == 4 ? GDN_DTYPE_F32 : GDN_DTYPE_F64, NULL, 0, D, Dk, Dv, na, nb,
                            num->matmul, cfg->mutant == KERN_MUTANT_COMPOSE_ORDER, 0};
  int xrc = GDN_OK;
  KR(affine_job) job = {in, cfg, num, out, sm, team, pairs,
                        per, ce, pe, na, nb, npair, 0, 0, comm, &x, &xrc, e};
  for (int64_t h_begin = 0; h_begin < heads; h_begin += P) {
    job.h_begin = h_begin;
    job.nh = heads - h_begin < P ? heads - h_begin : P;
#pragma omp parallel num_threads(nt)
    {
      const unsigned env = kern_fpenv_enter(num);
      KR(affine_thread)(&job);
      kern_fpenv_leave(num, env);
    }
    if (xrc) break;
  }
  gdn_free(pairs);
  KR(kchunk_team_free)(&team);
  return xrc;
}
