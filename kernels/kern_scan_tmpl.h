/* Template (see kern_real.h): kern_scan in F.  Items: the B x Hv (batch,
 * value head) pairs, independent, one thread each (dynamic schedule; the
 * result of an item does not depend on the thread).  Memory: one kchunk
 * plus one state h per thread, allocated once.  Each thread runs its items
 * in scan_thread, not inlined, inside its flush-to-zero environment
 * (kern_num.h). */
#include "kern_chunk_tmpl.h"

static __attribute__((noinline)) void KR(scan_thread)(const gdn_inputs *in, const kern_config *cfg,
                                                      const kern_num *num, gdn_outputs *out,
                                                      kreal *mem, size_t per) {
  const gdn_shape *s = &in->shape;
  const int64_t C = cfg->chunk, N = gdn_shape_chunks(s, C), items = s->B * s->Hv;
  kreal *base = mem + (size_t)omp_get_thread_num() * per;
  KR(kchunk) c;
  KR(kchunk_bind)(&c, base, in, num, C, out->dtype == GDN_DTYPE_BF16);
  kreal *h = base + KR(kchunk_elems)(C, s->Dk, s->Dv, num->matmul);
#pragma omp for schedule(dynamic, 1)
  for (int64_t it = 0; it < items; it++) {
    KR(kchunk_head)(&c, it / s->Hv, it % s->Hv);
    KR(kchunk_h0)(&c, h);
    KR(kchunk_scan)(&c, 0, N, h, out);
    KR(kchunk_store_state)(&c, h, gdn_outputs_ht(out, c.b, c.hv));
  }
}

static int KR(scan_run)(const gdn_inputs *in, const kern_config *cfg, const kern_num *num,
                        gdn_outputs *out, gdn_error *e) {
  const gdn_shape *s = &in->shape;
  const int64_t C = cfg->chunk, items = s->B * s->Hv;
  int nt = gdn_threads_get();
  if (nt > items) nt = (int)items;
  if (nt < 1) nt = 1;
  const size_t per = kern_size_add(KR(kchunk_elems)(C, s->Dk, s->Dv, num->matmul),
                                   KR(rows_pad)((size_t)s->Dk * (size_t)s->Dv));
  kreal *mem = gdn_calloc((size_t)nt, kern_size_mul(per, sizeof(kreal)),
                          "kern_scan per-thread scratch", e);
  if (!mem) {
    gdn_error_prefix(e, "kern_scan: ");
    return GDN_ERR_NOMEM;
  }
#pragma omp parallel num_threads(nt)
  {
    const unsigned env = kern_fpenv_enter(num);
    KR(scan_thread)(in, cfg, num, out, mem, per);
    kern_fpenv_leave(num, env);
  }
  gdn_free(mem);
  return GDN_OK;
}
