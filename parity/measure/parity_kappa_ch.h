/* parity_kappa_ch: the condition measure kappa_G per key channel, for a
 * per-channel gate (Kimi Delta Attention).
 *
 * KDA's chunked kernel (kern_kda_chunk_tmpl.h) forms, per channel d, the
 * cumulative log-decay G_i[d] = G_(i-1)[d] + g_i[d] inside each chunk of C
 * tokens in float32, and every decay as exp(G_x[d] - G_y[d]) (and exp(G[d])
 * for the carried state).  As for Gated DeltaNet's scalar gate
 * (parity_kappa.h), fl(G_i[d]) carries an absolute error of about u |G_i[d]|,
 * and the decays into token i along channel d inherit it as a relative
 * error while their mass s_i[d] is not negligible.  The measure of channel d
 * is GDN's applied to the gate g[., ., ., d] alone (parity_kappa.h states the
 * formulas: m_i = |G_i| s_i / (1 + s_i), o's kappa the root mean square of
 * m over (b, t, h), ht's the maximum over (b, h) of the decay-weighted mean),
 * and the channel's kappa is the larger of the two.  The channel with the
 * largest kappa is the one whose cumulative decay carries the error: a slow
 * channel has a small |G|, a very fast one a negligible mass s, and the
 * channel in between (|G| large while the decays still count) wins.
 *
 * G is formed as the kernel forms it: chunks of C from t = 0, the gate as
 * stored (float32; KDA has no padding tokens of its own), G_0 = g_0, the
 * sums rounded to float32 left to right; the rest in binary64 with libm's
 * exp, in the fixed order h, b, t (value heads outermost, so that a run streamed
 * by head group sums in the whole run's order: parity_kappa_ch_acc below): a
 * measure, not a bound, deterministic.
 * NaN in a channel's gate gives that channel NaN, and NaN wins the maximum. */
#ifndef PARITY_KAPPA_CH_H
#define PARITY_KAPPA_CH_H

#include <stdint.h>

#include "gdn_chgate.h"
#include "gdn_error.h"
#include "gdn_inputs.h"

typedef struct parity_kappa_ch {
  double worst;       /* kappa of the worst channel (max over d of max(o, ht)); 0 for T = 0 */
  int64_t worst_d;    /* its index (the first on a tie; 0 for T = 0) */
  double worst_o, worst_ht; /* that channel's o and ht measures */
  double median;      /* the median channel's kappa (the lower middle for even Dk) */
} parity_kappa_ch;

/* kappa per channel of gate over in's shape at chunk size C >= 1 on D >= 1
 * devices (the affine-prefix's shards of T / D tokens each start their own
 * chunk grid, and its chunks are min(C, T / D) long, as kern_kda_affine
 * takes them); GDN_OK, or GDN_ERR_NOMEM / GDN_ERR_INPUT (C < 1, D < 1, a
 * gate of another shape) with e set. */
int parity_kappa_channels(const gdn_inputs *in, const gdn_chgate *gate, int64_t C, int64_t D, parity_kappa_ch *out,
                          gdn_error *e);

/* The same, a head group at a time (a run streamed by key-head group,
 * parity_recur_stream.h): each channel's sum of squares and ht maximum
 * carried across the groups, added in the order of their value heads, so
 * that after every group once, finish gives parity_kappa_channels of the
 * whole run bit for bit.  init / clear own the accumulator; add takes a
 * group's inputs and gate (their shape, C and D as above); finish reads. */
typedef struct parity_kappa_ch_acc {
  int64_t Dk;
  double n;       /* B T Hv over the groups added */
  double *sq, *ht; /* per channel; NULL before the first add */
} parity_kappa_ch_acc;
void parity_kappa_ch_acc_init(parity_kappa_ch_acc *a);
void parity_kappa_ch_acc_clear(parity_kappa_ch_acc *a);
int parity_kappa_ch_acc_add(parity_kappa_ch_acc *a, const gdn_inputs *in, const gdn_chgate *gate, int64_t C, int64_t D,
                         gdn_error *e);
int parity_kappa_ch_acc_finish(const parity_kappa_ch_acc *a, parity_kappa_ch *out, gdn_error *e);

#endif
