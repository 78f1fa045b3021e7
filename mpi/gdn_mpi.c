#include "gdn_mpi.h"

#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_threads.h"
#include "kern.h"
#include "kern_prefix.h"

/* MPI's own words for rc, after "rank r: call failed: ". */
static int mpi_fail(int rc, const char *call, gdn_error *e) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0, rank = -1;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return gdn_error_set(e, GDN_ERR_INTERNAL, "rank %d: %s failed: %s", rank, call, msg);
}
#define MPI_TRY(call, name)                                                                        \
  do {                                                                                             \
    int mrc_ = (call);                                                                             \
    if (mrc_ != MPI_SUCCESS) return mpi_fail(mrc_, name, e);                                       \
  } while (0)

int gdn_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

int gdn_mpi_test_fault(int rank, const char *stage) {
  const char *v = getenv("GDN_TEST_MPI_DIE");
  char *end;
  if (!v) return 0;
  long r = strtol(v, &end, 10);
  return end != v && *end == ':' && r == rank && !strcmp(end + 1, stage);
}

void gdn_mpi_test_die(int rank, const char *stage) {
  if (gdn_mpi_test_fault(rank, stage)) raise(SIGKILL);
}

int gdn_mpi_init(int *argc, char ***argv, gdn_mpi *w, gdn_error *e) {
  int done = 0, provided = 0;
  memset(w, 0, sizeof *w);
  MPI_Initialized(&done);
  if (!done) {
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return gdn_error_set(e, GDN_ERR_INTERNAL, "MPI_Init_thread failed");
    w->initialised = 1;
    if (provided < MPI_THREAD_FUNNELED)
      return gdn_error_set(e, GDN_ERR_INTERNAL, "MPI provides no MPI_THREAD_FUNNELED");
  }
  MPI_TRY(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &w->rank), "MPI_Comm_rank");
  MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &w->size), "MPI_Comm_size");
  return GDN_OK;
}

void gdn_mpi_finalize(gdn_mpi *w) {
  if (w->initialised) MPI_Finalize();
  w->initialised = 0;
}

/* The exchange of one batch (kern.h's kern_affine_exchange). */
typedef struct mpi_ctx {
  int rank, size;
  kern_prefix schedule;
  void *buf, *work; /* send + receive buffers; the composition's work */
  size_t buf_bytes, work_bytes;
} mpi_ctx;

static size_t esize(const kern_affine_exchange *x) {
  return x->dtype == GDN_DTYPE_F64 ? sizeof(double) : sizeof(float);
}
static char *slot_a(const kern_affine_exchange *x, int64_t hb, int64_t r) {
  const size_t z = esize(x), np = x->na + x->nb;
  return (char *)x->pairs + ((size_t)hb * (size_t)x->devices * np + (size_t)r * x->na) * z;
}
static char *slot_b(const kern_affine_exchange *x, int64_t hb, int64_t r) {
  const size_t z = esize(x), np = x->na + x->nb;
  return (char *)x->pairs +
         ((size_t)hb * (size_t)x->devices * np + (size_t)x->devices * x->na + (size_t)r * x->nb) * z;
}
/* slot r of every head <-> nh packed pairs (A then B per head) */
static void pack(const kern_affine_exchange *x, int64_t r, char *dst) {
  const size_t z = esize(x);
  for (int64_t hb = 0; hb < x->nh; hb++, dst += (x->na + x->nb) * z) {
    memcpy(dst, slot_a(x, hb, r), x->na * z);
    memcpy(dst + x->na * z, slot_b(x, hb, r), x->nb * z);
  }
}
static void unpack(const kern_affine_exchange *x, int64_t r, const char *src) {
  const size_t z = esize(x);
  for (int64_t hb = 0; hb < x->nh; hb++, src += (x->na + x->nb) * z) {
    memcpy(slot_a(x, hb, r), src, x->na * z);
    memcpy(slot_b(x, hb, r), src + x->na * z, x->nb * z);
  }
}

static int ctx_reserve(void **p, size_t *have, size_t want, const char *what, gdn_error *e) {
  if (*have >= want) return GDN_OK;
  gdn_free(*p);
  *have = 0;
  if (!(*p = gdn_malloc(want, what, e))) return GDN_ERR_NOMEM;
  *have = want;
  return GDN_OK;
}

static int exchange_allgather(mpi_ctx *c, kern_affine_exchange *x, gdn_error *e) {
  const size_t z = esize(x), one = (size_t)x->nh * (x->na + x->nb);
  if (one > INT_MAX)
    return gdn_error_set(e, GDN_ERR_INPUT, "rank %d: %zu elements per rank exceed MPI's int count",
                         c->rank, one);
  int rc = ctx_reserve(&c->buf, &c->buf_bytes, one * z * ((size_t)c->size + 1), "MPI gather buffer", e);
  if (rc) return rc;
  char *send = c->buf, *recv = send + one * z;
  pack(x, c->rank, send);
  MPI_Datatype t = x->dtype == GDN_DTYPE_F64 ? MPI_DOUBLE : MPI_FLOAT;
  /* testing: "R:message" makes rank R's message invalid (a negative count) */
  const int cnt = gdn_mpi_test_fault(c->rank, "message") ? -1 : (int)one;
  MPI_TRY(MPI_Allgather(send, cnt, t, recv, (int)one, t, MPI_COMM_WORLD), "MPI_Allgather");
  for (int r = 0; r < c->size; r++)
    if (r != c->rank) unpack(x, r, recv + (size_t)r * one * z);
  return GDN_OK;
}

/* own = own o got (broken: got o own), as kern_prefix's combine does. */
static void compose_into(const kern_affine_exchange *x, int64_t hb, int64_t own, const char *got,
                         char *tmp, void *work) {
  const size_t z = esize(x);
  char *A = slot_a(x, hb, own), *B = slot_b(x, hb, own), *tA = tmp, *tB = tmp + x->na * z;
  const char *gA = got, *gB = got + x->na * z;
  const char *A2 = x->broken ? gA : A, *B2 = x->broken ? gB : B;
  const char *A1 = x->broken ? A : gA, *B1 = x->broken ? B : gB;
  if (x->dtype == GDN_DTYPE_F64)
    kern_affine_compose_f64(x->mode, x->dk, x->dv, (const double *)A2, (const double *)B2,
                            (const double *)A1, (const double *)B1, (double *)tA, (double *)tB,
                            work);
  else
    kern_affine_compose_f32(x->mode, x->dk, x->dv, (const float *)A2, (const float *)B2,
                            (const float *)A1, (const float *)B1, (float *)tA, (float *)tB, work);
  memcpy(A, tA, x->na * z);
  memcpy(B, tB, x->nb * z);
}

/* Hillis-Steele as point-to-point rounds, then the shift to exclusive. */
static int exchange_hillis(mpi_ctx *c, kern_affine_exchange *x, gdn_error *e) {
  const size_t z = esize(x), np = x->na + x->nb, one = (size_t)x->nh * np;
  if (one > INT_MAX)
    return gdn_error_set(e, GDN_ERR_INPUT, "rank %d: %zu elements per message exceed MPI's int count",
                         c->rank, one);
  const size_t wk = x->dtype == GDN_DTYPE_F64 ? kern_affine_work_elems_f64(x->mode, x->dk, x->dv) * z
                                              : kern_affine_work_elems_f32(x->mode, x->dk, x->dv) * z;
  int rc = ctx_reserve(&c->buf, &c->buf_bytes, (2 * one + np) * z, "MPI send/receive buffers", e);
  if (!rc) rc = ctx_reserve(&c->work, &c->work_bytes, wk + 64, "MPI composition work", e);
  if (rc) return rc;
  char *send = c->buf, *recv = send + one * z, *tmp = recv + one * z;
  MPI_Datatype t = x->dtype == GDN_DTYPE_F64 ? MPI_DOUBLE : MPI_FLOAT;
  const int me = c->rank, D = c->size;
  for (int s = 1; s < D; s *= 2) {
    const int up = me + s < D ? me + s : MPI_PROC_NULL, down = me >= s ? me - s : MPI_PROC_NULL;
    pack(x, me, send);
    const int cnt = gdn_mpi_test_fault(me, "message") ? -1 : (int)one; /* testing: an invalid message */
    MPI_TRY(MPI_Sendrecv(send, cnt, t, up, s, recv, (int)one, t, down, s, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE),
            "MPI_Sendrecv(hillis-steele round)");
    if (down != MPI_PROC_NULL)
      for (int64_t hb = 0; hb < x->nh; hb++)
        compose_into(x, hb, me, recv + (size_t)hb * np * z, tmp, c->work);
  }
  pack(x, me, send); /* the shift: rank r - 1's inclusive prefix into slot r - 1 */
  const int up = me + 1 < D ? me + 1 : MPI_PROC_NULL, down = me >= 1 ? me - 1 : MPI_PROC_NULL;
  MPI_TRY(MPI_Sendrecv(send, (int)one, t, up, 0, recv, (int)one, t, down, 0, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE),
          "MPI_Sendrecv(exclusive shift)");
  if (down != MPI_PROC_NULL) unpack(x, down, recv);
  x->prefixed = 1;
  return GDN_OK;
}

static int exchange(void *ctx, kern_affine_exchange *x, gdn_error *e) {
  mpi_ctx *c = ctx;
  gdn_mpi_test_die(c->rank, "fold");
  return c->schedule == KERN_PREFIX_HILLIS_STEELE ? exchange_hillis(c, x, e)
                                                  : exchange_allgather(c, x, e);
}

/* Every rank's o rows to rank 0 alone (only rank 0 judges and writes:
 * MPI_Gatherv, so no other rank receives the (D - 1) / D of o it does not
 * own), then ht from rank D - 1 to every rank (B Hv Dk Dv doubles, no
 * matter T). */
static int gather_outputs(const kern_config *cfg, const gdn_shape *s, int rank, int D,
                          gdn_outputs *out, gdn_error *e) {
  const size_t row = (size_t)(s->Hv * s->Dv);
  int *cnt = gdn_calloc(2 * (size_t)D, sizeof *cnt, "MPI gather counts", e);
  if (!cnt) return GDN_ERR_NOMEM;
  int *dis = cnt + D, rc = GDN_OK;
  for (int r = 0; r < D && !rc; r++) {
    kern_piece pc;
    kern_affine_piece(cfg, s->T, r, &pc);
    if ((size_t)s->T * row > INT_MAX)
      rc = gdn_error_set(e, GDN_ERR_INPUT, "rank %d: T Hv Dv = %zu exceeds MPI's int count", rank,
                         (size_t)s->T * row);
    cnt[r] = (int)((size_t)(pc.t1 - pc.t0) * row);
    dis[r] = (int)((size_t)pc.t0 * row);
  }
  for (int64_t b = 0; b < s->B && !rc; b++) {
    double *ob = gdn_outputs_o(out, b, 0, 0);
    int m = rank == 0 ? MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ob, cnt, dis, MPI_DOUBLE, 0,
                                    MPI_COMM_WORLD)
                      : MPI_Gatherv(ob + dis[rank], cnt[rank], MPI_DOUBLE, NULL, NULL, NULL, MPI_DOUBLE,
                                    0, MPI_COMM_WORLD);
    if (m != MPI_SUCCESS) rc = mpi_fail(m, "MPI_Gatherv(o)", e);
  }
  gdn_free(cnt);
  if (rc) return rc;
  const size_t nht = (size_t)(s->B * s->Hv * s->Dk * s->Dv);
  if (nht > INT_MAX) return gdn_error_set(e, GDN_ERR_INPUT, "rank %d: ht too large for MPI", rank);
  MPI_TRY(MPI_Bcast(out->ht, (int)nht, MPI_DOUBLE, D - 1, MPI_COMM_WORLD), "MPI_Bcast(ht)");
  return GDN_OK;
}

int gdn_mpi_affine_prefix(const gdn_inputs *in, const kern_config *cfg, gdn_outputs *out,
                          gdn_error *e) {
  int rank = 0, size = 1;
  gdn_outputs_clear(out);
  MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  if (cfg->devices != size)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "--backend mpi: %lld devices asked for but %d MPI ranks run (mpirun -np %lld)",
                         (long long)cfg->devices, size, (long long)cfg->devices);
  /* one batch size on every rank (kern.h): the smallest thread count */
  int mine = gdn_threads_get(), all = mine;
  MPI_TRY(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce(threads)");
  if (all != mine) gdn_threads_set(all);
  mpi_ctx c = {rank, size, cfg->prefix, NULL, NULL, 0, 0};
  kern_affine_comm comm = {rank, &c, exchange};
  int rc = kern_affine_prefix_rank(in, cfg, &comm, out, e);
  gdn_free(c.buf);
  gdn_free(c.work);
  if (!rc) {
    gdn_mpi_test_die(rank, "replay");
    rc = gather_outputs(cfg, &in->shape, rank, size, out, e);
  }
  if (rc) gdn_outputs_clear(out);
  return rc;
}

int gdn_mpi_send_text(const char *text, int to, int tag, gdn_error *e) {
  const size_t n = strlen(text) + 1;
  if (n > INT_MAX) return gdn_error_set(e, GDN_ERR_INTERNAL, "a part of %zu bytes exceeds MPI's int count", n);
  MPI_TRY(MPI_Send(text, (int)n, MPI_CHAR, to, tag, MPI_COMM_WORLD), "MPI_Send(part)");
  return GDN_OK;
}

int gdn_mpi_recv_text(char **text, int from, int tag, gdn_error *e) {
  MPI_Status st;
  int n = 0;
  *text = NULL;
  MPI_TRY(MPI_Probe(from, tag, MPI_COMM_WORLD, &st), "MPI_Probe(part)");
  MPI_TRY(MPI_Get_count(&st, MPI_CHAR, &n), "MPI_Get_count(part)");
  if (n < 1 || !(*text = malloc((size_t)n)))
    return gdn_error_set(e, n < 1 ? GDN_ERR_INTERNAL : GDN_ERR_NOMEM, "rank %d's part: %d bytes", from, n);
  int rc = MPI_Recv(*text, n, MPI_CHAR, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS || (*text)[n - 1] != 0) {
    free(*text);
    *text = NULL;
    return rc != MPI_SUCCESS ? mpi_fail(rc, "MPI_Recv(part)", e)
                             : gdn_error_set(e, GDN_ERR_INTERNAL, "rank %d's part is not text", from);
  }
  return GDN_OK;
}

void gdn_mpi_abort(int status) { MPI_Abort(MPI_COMM_WORLD, status); }

/* --- the oracle dealt across ranks (parity_dist_oracle.c) ----------------- */

static int int_count(size_t n, const char *what, gdn_error *e) {
  if (n <= INT_MAX) return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INPUT, "%s: %zu elements exceed MPI's int count", what, n);
}

/* n elements of type t from every rank, in rank order; what names the call
 * in messages. */
static int allgather(const void *mine, size_t n, MPI_Datatype t, void *all, const char *what, gdn_error *e) {
  int rc = int_count(n, what, e);
  if (rc) return rc;
  MPI_TRY(MPI_Allgather(mine, (int)n, t, all, (int)n, t, MPI_COMM_WORLD), what);
  return GDN_OK;
}

int gdn_mpi_allgather_f64(const double *mine, size_t n, double *all, gdn_error *e) {
  return allgather(mine, n, MPI_DOUBLE, all, "MPI_Allgather(doubles)", e);
}

int gdn_mpi_allgather_i64(const int64_t *mine, size_t n, int64_t *all, gdn_error *e) {
  return allgather(mine, n, MPI_INT64_T, all, "MPI_Allgather(int64)", e);
}

int gdn_mpi_bcast_bytes(void *buf, size_t n, int root, gdn_error *e) {
  int rc = int_count(n, "MPI_Bcast(bytes)", e);
  if (rc) return rc;
  MPI_TRY(MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast(bytes)");
  return GDN_OK;
}

int gdn_mpi_send_bytes(const void *buf, size_t n, int to, int tag, gdn_error *e) {
  int rc = int_count(n, "MPI_Send(bytes)", e);
  if (rc) return rc;
  MPI_TRY(MPI_Send(buf, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD), "MPI_Send(bytes)");
  return GDN_OK;
}

int gdn_mpi_recv_bytes(void *buf, size_t n, int from, int tag, gdn_error *e) {
  int rc = int_count(n, "MPI_Recv(bytes)", e);
  if (rc) return rc;
  MPI_TRY(MPI_Recv(buf, (int)n, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv(bytes)");
  return GDN_OK;
}

/* o[b, :, j, :] is T rows of Dv doubles, Hv Dv apart: one vector type,
 * sent in place; ht[b, j] is Dk Dv contiguous doubles. */
int gdn_mpi_bcast_head(gdn_outputs *out, int64_t b, int64_t j, int root, gdn_error *e) {
  const gdn_shape *s = &out->shape;
  int rc;
  if ((rc = int_count((size_t)s->T, "MPI_Bcast(o) rows", e)) ||
      (rc = int_count((size_t)(s->Hv * s->Dv), "MPI_Bcast(o) stride", e)) ||
      (rc = int_count((size_t)(s->Dk * s->Dv), "MPI_Bcast(ht)", e)))
    return rc;
  MPI_Datatype rows;
  MPI_TRY(MPI_Type_vector((int)s->T, (int)s->Dv, (int)(s->Hv * s->Dv), MPI_DOUBLE, &rows),
          "MPI_Type_vector(o)");
  int m = MPI_Type_commit(&rows);
  if (m == MPI_SUCCESS) m = MPI_Bcast(gdn_outputs_o(out, b, 0, j), 1, rows, root, MPI_COMM_WORLD);
  MPI_Type_free(&rows);
  if (m != MPI_SUCCESS) return mpi_fail(m, "MPI_Bcast(o)", e);
  MPI_TRY(MPI_Bcast(gdn_outputs_ht(out, b, j), (int)(s->Dk * s->Dv), MPI_DOUBLE, root, MPI_COMM_WORLD),
          "MPI_Bcast(ht)");
  return GDN_OK;
}

/* count rows of len doubles, stride apart, from p: one vector type. */
static int bcast_rows(double *p, int64_t count, int64_t len, int64_t stride, int root, const char *what,
                      gdn_error *e) {
  int rc;
  if ((rc = int_count((size_t)count, what, e)) || (rc = int_count((size_t)stride, what, e))) return rc;
  MPI_Datatype rows;
  MPI_TRY(MPI_Type_vector((int)count, (int)len, (int)stride, MPI_DOUBLE, &rows), "MPI_Type_vector(gradients)");
  int m = MPI_Type_commit(&rows);
  if (m == MPI_SUCCESS) m = MPI_Bcast(p, 1, rows, root, MPI_COMM_WORLD);
  MPI_Type_free(&rows);
  return m == MPI_SUCCESS ? GDN_OK : mpi_fail(m, what, e);
}

/* Item (b, kh): dq, dk are T rows of Dk, Hk Dk apart; dv T rows of G Dv,
 * Hv Dv apart; dg, dbeta T rows of G, Hv apart; dh0 G Dk Dv contiguous. */
int gdn_mpi_bcast_grads_item(gdn_grads *g, int64_t b, int64_t kh, int root, gdn_error *e) {
  const gdn_shape *s = &g->shape;
  const int64_t G = s->Hv / s->Hk, T = s->T;
  const size_t qk = (size_t)(b * T * s->Hk + kh) * (size_t)s->Dk, hv = (size_t)(b * T * s->Hv + kh * G);
  int rc;
  if ((rc = bcast_rows(g->dq + qk, T, s->Dk, s->Hk * s->Dk, root, "MPI_Bcast(dq)", e)) ||
      (rc = bcast_rows(g->dk + qk, T, s->Dk, s->Hk * s->Dk, root, "MPI_Bcast(dk)", e)) ||
      (rc = bcast_rows(g->dv + hv * (size_t)s->Dv, T, G * s->Dv, s->Hv * s->Dv, root, "MPI_Bcast(dv)", e)) ||
      (rc = bcast_rows(g->dg + hv, T, G, s->Hv, root, "MPI_Bcast(dg)", e)) ||
      (rc = bcast_rows(g->dbeta + hv, T, G, s->Hv, root, "MPI_Bcast(dbeta)", e)))
    return rc;
  const size_t h0 = (size_t)(b * s->Hv + kh * G) * (size_t)(s->Dk * s->Dv);
  return bcast_rows(g->dh0 + h0, 1, G * s->Dk * s->Dv, G * s->Dk * s->Dv, root, "MPI_Bcast(dh0)", e);
}
