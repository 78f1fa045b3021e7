/* Token sharding (kern_config.shard = KERN_SHARD_TOKENS, kern_affine_piece):
 * upstream's shard_map gives device r the tokens [r T/D, (r+1) T/D), which
 * it chunks from its own first token and pads at its own end.
 *
 *   - geometry: pieces tile [0, T) in order, count = ceil((T/D) / C),
 *     pad = count C - T/D on every device; CHUNKS pieces are array_split's;
 *   - refusal: D not dividing T is refused with the nearest valid T named,
 *     by kern_config_validate and by the kernel (nothing allocated);
 *   - exactness: the kernel in TOKENS mode equals, bit for bit, the kernel in
 *     CHUNKS mode run on the explicitly padded sequence (each piece followed
 *     by its zero rows, so that array_split hands every device exactly its
 *     piece): the padding sits at every seam, nowhere else.  Negative
 *     control: CHUNKS mode on the unpadded input differs (its chunk
 *     boundaries are the unsharded scan's);
 *   - accuracy: with long-memory gates, where state crosses every seam, the
 *     token-sharded result is as close to the float64 recurrence as the
 *     stock scan is (the padding is exact: g = 0, k = v = 0 leave h as is).
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gdn_threads.h"
#include "kern_test_util.h"
#include "../check_runner.h"

/* Device r's piece of T tokens under c, every field against `want` (all
 * of them printed on a failure). */
static void expect_piece(const kern_config *c, int64_t T, int64_t r, kern_piece want) {
  kern_piece p;
  kern_affine_piece(c, T, r, &p);
  ck_assert_msg(!memcmp(&p, &want, sizeof p),
                "T %lld device %lld: t0 %lld t1 %lld base %lld first %lld count %lld index %lld pad %lld", (long long)T,
                (long long)r, (long long)p.t0, (long long)p.t1, (long long)p.base, (long long)p.first,
                (long long)p.count, (long long)p.index, (long long)p.pad);
}

static kern_config tok_cfg(int64_t C, int64_t D) {
  kern_config c = kt_cfg(GDN_DTYPE_F32, C, D);
  c.shard = KERN_SHARD_TOKENS;
  return c;
}

START_TEST(geometry) {
  long bad = 0;
  for (int64_t T = 1; T <= 130; T++)
    for (int64_t D = 1; D <= T; D++) {
      if (T % D) continue;
      for (int64_t C = 1; C <= 70; C += 3) {
        kern_config c = tok_cfg(C, D);
        int64_t next = 0, idx = 0;
        for (int64_t r = 0; r < D; r++) {
          kern_piece p;
          kern_affine_piece(&c, T, r, &p);
          const int64_t L = T / D, cnt = (L + C - 1) / C;
          bad += p.t0 != next || p.t1 != p.t0 + L || p.base != p.t0 || p.first != 0;
          bad += p.count != cnt || p.pad != cnt * C - L || p.index != idx;
          next = p.t1;
          idx += p.count;
        }
        bad += next != T;
      }
    }
  ck_assert_int_eq(bad, 0);
  /* CHUNKS: array_split's shards, clipped at T */
  kern_config c = kt_cfg(GDN_DTYPE_F32, 16, 3); /* 7 chunks: 3, 2, 2 */
  expect_piece(&c, 100, 2, (kern_piece){.t0 = 80, .t1 = 100, .base = 0, .first = 5, .count = 2, .index = 5, .pad = 12});
  expect_piece(&c, 100, 1, (kern_piece){.t0 = 48, .t1 = 80, .base = 0, .first = 3, .count = 2, .index = 3, .pad = 0});
  /* an example of token sharding (docs/numerics.md): T = 300 over 4 devices at C = 64 is 75
   * tokens each, 2 chunks each, 53 rows of padding at every device's end */
  c = tok_cfg(64, 4);
  expect_piece(&c, 300, 1, (kern_piece){.t0 = 75, .t1 = 150, .base = 75, .first = 0, .count = 2, .index = 2, .pad = 53});
}
END_TEST

static void expect_refusal(int64_t T, int64_t D, const char *nearest) {
  gdn_shape s = {1, T, 1, 1, 8, 8};
  gdn_error e;
  gdn_error_init(&e);
  kern_config c = tok_cfg(16, D);
  ck_assert_int_eq(kern_config_validate(&c, &s, &e), GDN_ERR_INPUT);
  char want[128];
  snprintf(want, sizeof want, "--devices %" PRId64 " does not divide T = %" PRId64, D, T);
  ck_assert_msg(strstr(e.msg, want), "%s", e.msg);
  ck_assert_msg(strstr(e.msg, nearest), "%s (want '%s')", e.msg, nearest);
}

START_TEST(refused_when_d_does_not_divide_t) {
  expect_refusal(100, 3, "the nearest valid T is 99");
  expect_refusal(100, 7, "the nearest valid T is 98");
  expect_refusal(101, 6, "the nearest valid T is 102");
  expect_refusal(100, 8, "the nearest valid T is 96 or 104");
  expect_refusal(5, 8, "the nearest valid T is 8");
  /* accepted: divisors, including more devices than chunks (each device
   * pads its own few tokens to a chunk) */
  gdn_shape s = {1, 96, 1, 1, 8, 8};
  gdn_error e;
  gdn_error_init(&e);
  kern_config c = tok_cfg(64, 8);
  ck_assert_int_eq(kern_config_validate(&c, &s, &e), GDN_OK);
  c.shard = KERN_SHARD_CHUNKS; /* negative control: 2 chunks cannot feed 8 devices */
  ck_assert_int_eq(kern_config_validate(&c, &s, &e), GDN_ERR_INPUT);
  c.shard = (kern_shard)7;
  ck_assert_int_eq(kern_config_validate(&c, &s, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "shard"));

  /* the kernel refuses before allocating, and leaves out cleared */
  gdn_inputs in = kt_inputs((gdn_shape){1, 100, 1, 1, 8, 8}, 3, 0, 1, 1.0f);
  gdn_outputs out = kt_outputs();
  c = tok_cfg(16, 3);
  gdn_error_init(&e);
  ck_assert_int_eq(kern_affine_prefix(&in, &c, &out, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "kern_affine_prefix"));
  ck_assert_ptr_nonnull(strstr(e.msg, "nearest valid T is 99"));
  ck_assert_ptr_null(out.o);
  ck_assert_ptr_null(out.ht);
  gdn_inputs_clear(&in);

  kern_shard m;
  ck_assert_int_eq(kern_shard_parse("tokens", &m, &e), GDN_OK);
  ck_assert_int_eq(m, KERN_SHARD_TOKENS);
  ck_assert_int_eq(kern_shard_parse("chunks", &m, &e), GDN_OK);
  ck_assert_int_eq(m, KERN_SHARD_CHUNKS);
  ck_assert_int_eq(kern_shard_parse("token", &m, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "--shard 'token'"));
  ck_assert_str_eq(kern_shard_name(KERN_SHARD_TOKENS), "tokens");
  kern_config_init(&c);
  ck_assert_int_eq(c.shard, KERN_SHARD_TOKENS); /* upstream's is the default */
}
END_TEST

/* in, with device r's piece followed by its pad zero rows (q, k, v, g,
 * beta = 0): D count C tokens. */
static void make_padded(gdn_inputs *dst, const gdn_inputs *in, const kern_config *c) {
  const gdn_shape *s = &in->shape;
  kern_piece p;
  kern_affine_piece(c, s->T, 0, &p);
  gdn_shape ps = *s;
  ps.T = c->devices * p.count * c->chunk;
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(dst);
  ck_assert_int_eq(gdn_inputs_alloc(dst, &ps, in->h0 != NULL, &e), GDN_OK);
  dst->l2norm_in_kernel = in->l2norm_in_kernel;
  dst->has_scale = in->has_scale;
  dst->scale = in->scale;
  if (in->h0) memcpy(dst->h0, in->h0, gdn_shape_numel_state(s) * sizeof(float));
  for (int64_t r = 0; r < c->devices; r++) {
    kern_affine_piece(c, s->T, r, &p);
    for (int64_t b = 0; b < s->B; b++)
      for (int64_t t = p.t0; t < p.t1; t++) {
        const int64_t u = p.index * c->chunk + (t - p.t0); /* its row in dst */
        memcpy(dst->q + (b * ps.T + u) * s->Hk * s->Dk, in->q + (b * s->T + t) * s->Hk * s->Dk,
               (size_t)(s->Hk * s->Dk) * sizeof(float));
        memcpy(dst->k + (b * ps.T + u) * s->Hk * s->Dk, in->k + (b * s->T + t) * s->Hk * s->Dk,
               (size_t)(s->Hk * s->Dk) * sizeof(float));
        memcpy(dst->v + (b * ps.T + u) * s->Hv * s->Dv, in->v + (b * s->T + t) * s->Hv * s->Dv,
               (size_t)(s->Hv * s->Dv) * sizeof(float));
        memcpy(dst->g + (b * ps.T + u) * s->Hv, in->g + (b * s->T + t) * s->Hv,
               (size_t)s->Hv * sizeof(float));
        memcpy(dst->beta + (b * ps.T + u) * s->Hv, in->beta + (b * s->T + t) * s->Hv,
               (size_t)s->Hv * sizeof(float));
      }
  }
}

/* o of the padded run, at the original tokens, equals x's o bit for bit;
 * ht and seams too.  Returns 1 when every element matches. */
static int same_as_padded(const gdn_outputs *x, const kern_affine_seams *sx,
                          const gdn_outputs *y, const kern_affine_seams *sy,
                          const kern_config *c) {
  const gdn_shape *s = &x->shape;
  int same = kt_same(x->ht, y->ht, gdn_shape_numel_state(s));
  const size_t ns = (size_t)(s->B * s->Hv * c->devices * s->Dk * s->Dv);
  same &= kt_same(sx->h_in, sy->h_in, ns) && kt_same(sx->h_out, sy->h_out, ns);
  for (int64_t r = 0; r < c->devices; r++) {
    kern_piece p;
    kern_affine_piece(c, s->T, r, &p);
    for (int64_t b = 0; b < s->B; b++)
      for (int64_t t = p.t0; t < p.t1; t++)
        for (int64_t h = 0; h < s->Hv; h++) {
          const int64_t u = p.index * c->chunk + (t - p.t0);
          same &= kt_same(gdn_outputs_o((gdn_outputs *)x, b, t, h),
                          gdn_outputs_o((gdn_outputs *)y, b, u, h), (size_t)s->Dv);
        }
  }
  return same;
}

typedef struct tok_case {
  gdn_shape s;
  int64_t C, D;
  kern_matmul mm;
  kern_prefix prefix;
  int threads;
} tok_case;

static const tok_case cases[] = {
    {{1, 150, 1, 1, 16, 12}, 16, 3, KERN_MATMUL_IEEE, KERN_PREFIX_SEQUENTIAL, 1},   /* L 50: pad 14 */
    {{2, 120, 2, 4, 16, 8}, 16, 4, KERN_MATMUL_HIGHEST, KERN_PREFIX_HILLIS_STEELE, 2}, /* L 30: pad 2 */
    {{1, 96, 1, 2, 32, 32}, 64, 8, KERN_MATMUL_IEEE, KERN_PREFIX_ASSOCIATIVE_SCAN, 2}, /* L 12 < C */
    {{1, 128, 1, 1, 16, 16}, 16, 4, KERN_MATMUL_DEFAULT, KERN_PREFIX_HILLIS_STEELE, 1}, /* L 32: no pad */
};

START_TEST(equals_explicitly_padded_chunks) {
  const tok_case *tc = &cases[_i];
  gdn_threads_set(tc->threads);
  gdn_inputs in, pin;
  kt_make(&in, tc->s, 40 + (uint64_t)_i, 1, 1, 0.002f); /* long memory: state crosses seams */
  kern_config c = tok_cfg(tc->C, tc->D);
  c.matmul = tc->mm;
  c.prefix = tc->prefix;
  make_padded(&pin, &in, &c);
  kern_config cp = c;
  cp.shard = KERN_SHARD_CHUNKS;
  gdn_outputs x, y, z;
  gdn_outputs_init(&x), gdn_outputs_init(&y), gdn_outputs_init(&z);
  kern_affine_seams sx, sy, sz;
  kern_affine_seams_init(&sx), kern_affine_seams_init(&sy), kern_affine_seams_init(&sz);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(kern_affine_prefix_seams(&in, &c, &x, &sx, &e), GDN_OK);
  ck_assert_int_eq(kern_affine_prefix_seams(&pin, &cp, &y, &sy, &e), GDN_OK);
  ck_assert_msg(same_as_padded(&x, &sx, &y, &sy, &c), "case %d: tokens != padded chunks", _i);
  kern_piece p;
  kern_affine_piece(&c, tc->s.T, 0, &p);
  /* negative control: array_split of the unpadded sequence's chunks chunks
   * differently whenever there is padding at the seams (case 2 has more
   * devices than chunks: array_split refuses it) */
  const int split_ok = tc->D <= gdn_shape_chunks(&tc->s, tc->C);
  ck_assert_int_eq(kern_affine_prefix_seams(&in, &cp, &z, &sz, &e),
                   split_ok ? GDN_OK : GDN_ERR_INPUT);
  if (split_ok && p.pad > 0)
    ck_assert_msg(!kt_same(x.o, z.o, gdn_shape_numel_v(&tc->s)), "case %d: tokens == chunks", _i);
  else if (split_ok) /* the same pieces, the same chunks: identical */
    ck_assert(kt_same_outputs(&x, &z));
  gdn_outputs_clear(&x), gdn_outputs_clear(&y), gdn_outputs_clear(&z);
  kern_affine_seams_clear(&sx), kern_affine_seams_clear(&sy), kern_affine_seams_clear(&sz);
  gdn_inputs_clear(&pin);
  gdn_inputs_clear(&in);
  gdn_threads_set(1);
}
END_TEST

/* Against the float64 recurrence: the token-sharded kernel is within 4x the
 * stock scan's own error (both are float32 chunked computations of the same
 * recurrence; padding adds no rounding, the composition adds a few ulps at
 * each of the 5 seams: measured ratios 0.9-1.3), and an absolute 2e-5 (~170
 * float32 ulps at o's magnitude ~1, what the float32 scan delivers here,
 * measured 1e-6).  The seams' incoming states differ from the carries the
 * previous devices ended with by round-off only (state_rel < 1e-5;
 * measured ~1e-7). */
START_TEST(accurate_with_padding_at_seams) {
  gdn_shape s = {1, 300, 1, 2, 32, 32};
  gdn_inputs in = kt_inputs(s, 77, 1, 1, 0.002f);
  kern_config c = tok_cfg(16, 6); /* 50 tokens: 4 chunks, 14 padding rows per device */
  kern_config c64 = c;
  c64.dtype = GDN_DTYPE_F64;
  gdn_outputs ref, scan, aff;
  gdn_outputs_init(&ref), gdn_outputs_init(&scan), gdn_outputs_init(&aff);
  kt_run_ok(K_RECURRENT, &in, &c64, &ref);
  kt_run_ok(K_SCAN, &in, &c, &scan);
  kern_affine_seams sm;
  kern_affine_seams_init(&sm);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(kern_affine_prefix_seams(&in, &c, &aff, &sm, &e), GDN_OK);
  const double es = kt_rel_o(&scan, &ref), ea = kt_rel_o(&aff, &ref);
  const double hs = kt_rel_ht(&scan, &ref), ha = kt_rel_ht(&aff, &ref);
  ck_assert_msg(ea <= 4 * es + 1e-7 && ea < 2e-5, "o: affine %.3g, scan %.3g", ea, es);
  ck_assert_msg(ha <= 4 * hs + 1e-7 && ha < 2e-5, "ht: affine %.3g, scan %.3g", ha, hs);
  const size_t nb = (size_t)(s.Dk * s.Dv);
  for (int64_t hv = 0; hv < s.Hv; hv++)
    for (int64_t r = 1; r < c.devices; r++) {
      const double rel = kt_rel(kern_affine_seams_h_in(&sm, 0, hv, r),
                                kern_affine_seams_h_out(&sm, 0, hv, r - 1), nb);
      ck_assert_msg(rel < 1e-5, "seam %ld head %ld: %.3g", (long)r, (long)hv, rel);
    }
  /* negative control of the bound: a state that crossed no seam (device r
   * restarted from h0 = zeros instead of the prefix) is far off */
  double far = 0;
  for (int64_t r = 1; r < c.devices; r++) {
    double z[32 * 32] = {0};
    double d = kt_rel(z, kern_affine_seams_h_out(&sm, 0, 0, r - 1), nb);
    far = d > far ? d : far;
  }
  ck_assert(far > 0.5);
  gdn_outputs_clear(&ref), gdn_outputs_clear(&scan), gdn_outputs_clear(&aff);
  kern_affine_seams_clear(&sm);
  gdn_inputs_clear(&in);
}
END_TEST

/* D = 1: the one piece is [0, T) on the scan's grid in both modes. */
START_TEST(one_device_is_the_scan) {
  gdn_inputs in = kt_inputs((gdn_shape){1, 77, 1, 1, 16, 16}, 5, 1, 1, 0.01f);
  kern_config c = tok_cfg(16, 1);
  gdn_outputs a = kt_outputs(), s = kt_outputs();
  kt_run_ok(K_AFFINE, &in, &c, &a);
  kt_run_ok(K_SCAN, &in, &c, &s);
  ck_assert(kt_same_outputs(&a, &s));
  gdn_outputs_clear(&a), gdn_outputs_clear(&s);
  gdn_inputs_clear(&in);
}
END_TEST

int main(void) {
  Suite *su = suite_create("shard_tokens");
  TCase *tc = CKR_TCASE(su, "all", 120, geometry, refused_when_d_does_not_divide_t, accurate_with_padding_at_seams,
      one_device_is_the_scan);
  tcase_add_loop_test(tc, equals_explicitly_padded_chunks, 0, (int)(sizeof cases / sizeof cases[0]));
  return ckr_run(su);
}
