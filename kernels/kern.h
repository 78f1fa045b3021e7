/* kern: the float implementations of the Gated DeltaNet layer under test.
 *
 * All kernels take the same inputs and write o and the final state ht into
 * `out` (initialised by the caller, allocated here).  They never read the
 * oracle.  Results are bit-identical for any thread count.
 *
 *   kern_scan            the stock chunked algorithm exactly as MaxText's
 *                        jax_chunk_gated_delta_rule computes it (algorithm.md
 *                        steps 1-4): intra-chunk WY factors, then a sequential
 *                        scan over chunks.
 *   kern_recurrent       the token-level recurrence.
 *   kern_affine_prefix   context parallelism over cfg->devices simulated
 *                        devices: the sequence is split into D contiguous
 *                        pieces by cfg->shard (kern_affine_piece: T/D tokens
 *                        each, chunked and padded per device, as upstream's
 *                        shard_map; or whole chunks by array_split); each device
 *                        folds its chunks from (I, 0) into one (A, B); the D
 *                        pairs are gathered; the exclusive prefix is taken with
 *                        cfg->prefix; each device replays its chunks with the
 *                        scan body from its incoming state; ht is the full
 *                        composition applied to h0.  At most one (A, B) per
 *                        device is held at a time.  D = 1 equals kern_scan
 *                        bit for bit.
 *
 * Numerics (kern_num.h resolves cfg; kern_num_describe says it in words):
 *   - compute dtype float32 or float64: every step in that format; bfloat16:
 *     the float32 kernels with MaxText's compute_dtype = bfloat16 rounding
 *     points (kern_num.h lists them in order; g, its cumsum, exp, the solve
 *     and the carried state stay float32);
 *   - every matrix product is kern_mm in cfg->matmul (kern_mm.h: IEEE, or
 *     XLA's 1 / 3 / 6 bfloat16 passes with float32 accumulation; float64
 *     ignores the mode);
 *   - cfg->ftz (float32 / bfloat16 compute): subnormal inputs and every
 *     subnormal result flushed to zero, as TPU does (kern_num.h);
 *   - the rounding points of step 1 (L2 norm, cast, scale) are in
 *     kern_rows_tmpl.h, those of the chunk (G, WY factors, scan body, affine
 *     map) in kern_chunk_tmpl.h, of the recurrence in kern_recurrent_tmpl.h,
 *     of composition, apply and the prefix schedules in kern_prefix.h;
 *   - o is rounded once to kern_output_dtype(cfg, in->bf16_mask) (float32 for
 *     float32 / bfloat16 compute unless q was stored as bfloat16; float64 for
 *     float64) and stored as double, or as float32 when the caller set
 *     out->f32_ok and that dtype is not float64 (the same values: kern_out.h);
 *     ht holds the values of the final state (float32 for bfloat16 compute).
 *   With ftz off, float32 / float64 with matmul ieee and the sequential
 *   prefix compute exactly what they did before these modes existed.
 *
 * The final state of kern_affine_prefix:
 *   D >= 2  ht = A_cum[D-1] h0 + B_cum[D-1], the full composition.
 *   D  = 1  ht = the replay's carry after the last chunk.  With one device
 *           the exclusive prefix is the identity and the single replay *is*
 *           the stock scan (the unsharded path MaxText takes when the context
 *           axis has size 1), so o and ht equal kern_scan's bit for bit; no
 *           fold is computed.
 *
 * Threads: kern_scan and kern_recurrent run the B x Hv heads as independent
 * items; kern_affine_prefix runs (head, device) items for fold and replay
 * and head items for the prefix (see kern_affine_tmpl.h).  Memory besides
 * `out`: per thread, one chunk's temporaries, O(C^2 + C (Dk + Dv) + Dk Dv)
 * elements of F plus kern_gemm's 72 / 136 KiB workspace (kern_affine_prefix:
 * plus 2 Dk^2 + 4 Dk Dv for the chunk's (A_n, B_n), a composition and the
 * carried state); for kern_affine_prefix at D >= 2 also a gather buffer of
 * min(B Hv, threads) x D pairs of Dk^2 + Dk Dv elements.  Never O(B Hv D)
 * or O(T): heads are processed in batches of at most `threads`.
 *
 * Errors: GDN_ERR_INPUT for a bad shape, config (kern_config_validate) or an
 * unknown mode (and ftz off x86); GDN_ERR_NOMEM when an allocation fails.  On any error
 * `out` (and `seams`) are left cleared.
 */
#ifndef KERN_H
#define KERN_H

#include "gdn_error.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "kern_config.h"

/* Threads a chunked kernel uses on shape s: gdn_threads_for(max(B Hv,
 * Dv)) -- heads are split among threads, and a team on one head splits
 * at most Dv columns. */
int kern_threads(const gdn_shape *s);
/* Bytes of scratch kern_scan and kern_affine_prefix allocate for cfg on s
 * (the larger of the two; outputs, inputs and seams not included), with
 * kern_threads(s) threads; SIZE_MAX when it overflows.  Callers count it
 * against a memory limit before running (--max-bytes). */
size_t kern_scratch_bytes(const gdn_shape *s, const kern_config *cfg);

int kern_scan(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out, gdn_error *e);
/* cfg->chunk and cfg->devices do not apply and are not checked; the
 * numerics fields are. */
int kern_recurrent(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out, gdn_error *e);
int kern_affine_prefix(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out,
                       gdn_error *e);

/* Shard r of D over N chunks: the first N mod D devices take ceil(N/D)
 * chunks, the others floor(N/D) (numpy.array_split's rule), in order. */
void kern_affine_shard(int64_t n_chunks, int64_t devices, int64_t r, int64_t *first_chunk,
                       int64_t *n_local);

/* What device r of a kern_affine_prefix run holds and how it chunks it.
 *   t0, t1   its tokens [t0, t1) of the sequence;
 *   base     the token its chunk grid starts from: chunk n covers tokens
 *            base + n C .. base + n C + C - 1, those >= t1 being zero
 *            padding (g = 0, k = v = 0: the state passes through);
 *   first, count  its chunks on that grid;
 *   index    the index of its first chunk in the concatenation of every
 *            device's chunks (the sequence as the devices see it);
 *   pad      the padding rows of its last chunk.
 * CHUNKS: base = 0, [first, first + count) = kern_affine_shard(N, D, r),
 *   t0 = first C, t1 = min((first + count) C, T), index = first; only the
 *   last device can have pad > 0.
 * TOKENS (upstream's shard_map; D divides T, kern_config_validate):
 *   t0 = base = r T/D, t1 = t0 + T/D, first = 0, count = ceil((T/D) / C),
 *   index = r count; when C does not divide T/D every device ends with
 *   pad = count C - T/D zero rows, so padding sits at every seam and the
 *   chunk boundaries are not the unsharded scan's.
 * D = 1 is the same piece in both modes: [0, T) on the scan's grid. */
typedef struct kern_piece {
  int64_t t0, t1, base, first, count, index, pad;
} kern_piece;

void kern_affine_piece(const kern_config *cfg, int64_t T, int64_t r, kern_piece *p);

/* The states at the device seams of one kern_affine_prefix run, for the
 * harness's seam metrics.  Both arrays are (B, Hv, D, Dk, Dv), row-major,
 * holding F values as double:
 *   h_in[b, hv, r]   the state device r starts its replay from: h0 (zeros
 *                    when in->h0 is NULL) for r = 0, else the prefix-derived
 *                    A_cum[r-1] h0 + B_cum[r-1];
 *   h_out[b, hv, r]  device r's replay carry after its last chunk.
 * In exact arithmetic h_in[r] = h_out[r-1] for 1 <= r < D (seam r), and
 * h_out[D-1] = ht.  The difference at seam r is the round-off of composing
 * (and, with a mutant such as compose-order, the bug; kern_mutant.h).  For D = 1 there
 * is no seam; h_out[0] equals ht.  Memory: 2 B Hv D Dk Dv doubles, allocated
 * only when asked for.  Pair kern_affine_seams_init with _clear.
 * prefix_compositions / prefix_rounds: what the exclusive prefix of one head
 * did (kern_prefix_stats; every head does the same), 0 for D = 1. */
typedef struct kern_affine_seams {
  int64_t B, Hv, devices, Dk, Dv;
  double *h_in, *h_out;
  int64_t prefix_compositions, prefix_rounds;
} kern_affine_seams;

void kern_affine_seams_init(kern_affine_seams *sm);
void kern_affine_seams_clear(kern_affine_seams *sm);

static inline double *kern_affine_seams_h_in(kern_affine_seams *sm, int64_t b, int64_t hv,
                                             int64_t r) {
  return sm->h_in + ((b * sm->Hv + hv) * sm->devices + r) * sm->Dk * sm->Dv;
}
static inline double *kern_affine_seams_h_out(kern_affine_seams *sm, int64_t b, int64_t hv,
                                              int64_t r) {
  return sm->h_out + ((b * sm->Hv + hv) * sm->devices + r) * sm->Dk * sm->Dv;
}

/* kern_affine_prefix that also fills `seams` (initialised; allocated here;
 * NULL: not recorded, then this is kern_affine_prefix). */
int kern_affine_prefix_seams(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out,
                             kern_affine_seams *seams, gdn_error *e);

/* Ranks as devices: one process computes one device of kern_affine_prefix.
 * A distributed driver (mpi/, which owns the communication; kernels/ knows
 * no transport) passes `comm`; the kernel then folds and replays only device
 * comm->self, and between the fold and the prefix of each batch of heads it
 * calls comm->exchange once, from one thread, with the batch's gather
 * buffer, in which only device self's pair of each head is filled:
 *   pairs    nh heads, each D Dk x Dk A blocks then D Dk x Dv B blocks,
 *            elements of `dtype` (F32 or F64: the compute type);
 *   exchange either fills every other slot (an all-gather; prefixed = 0:
 *            the kernel then takes cfg->prefix over the D pairs exactly as
 *            the simulated run does), or takes the prefix itself and sets
 *            prefixed = 1, leaving the inclusive prefix of device self - 1
 *            in slot self - 1 (self >= 1) and, on device D - 1, the full
 *            composition in slot D - 1; it composes with
 *            kern_affine_compose_f32/_f64 in `mode` (the resolved matmul
 *            mode) so the values are the simulated schedule's.
 * With the same values in those slots the replay is the simulated replay,
 * so o rows [t0, t1) of device self's piece (kern_affine_piece) equal the
 * simulated run's bit for bit; the other rows of `out` stay zero.  ht is
 * the full composition applied to h0 on device D - 1 (with prefixed = 1 it
 * is meaningful only there; D = 1: the replay's carry).  The batch size is
 * min(B Hv, gdn_threads_get()): every process must use the same thread
 * count so the calls to exchange match.  A non-zero return from exchange
 * (a GDN_ERR_* code with `e` set) ends the run with that code, `out`
 * cleared.  seams are not recorded (NULL). */
typedef struct kern_affine_exchange {
  gdn_dtype dtype;
  void *pairs;
  int64_t nh, devices, dk, dv;
  size_t na, nb; /* Dk^2 and Dk Dv */
  kern_matmul mode;
  int broken;    /* cfg->mutant == KERN_MUTANT_COMPOSE_ORDER (the one mutant the exchange honours) */
  int prefixed;  /* set by exchange */
} kern_affine_exchange;

typedef struct kern_affine_comm {
  int64_t self;
  void *ctx;
  int (*exchange)(void *ctx, kern_affine_exchange *x, gdn_error *e);
} kern_affine_comm;

int kern_affine_prefix_rank(const gdn_inputs *in, const kern_config *cfg,
                            const kern_affine_comm *comm, gdn_outputs *out, gdn_error *e);

#endif
