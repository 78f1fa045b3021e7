/* gdn_synth_segments: packed documents' segment ids (gdn_synth.h), and the
 * token kinds every kernel and oracle reads them through
 * (gdn_inputs_token_kind). */
#include <check.h>
#include <string.h>

#include "gdn_synth.h"
#include "../check_runner.h"

static void seg(gdn_inputs *in, int64_t B, int64_t T, uint64_t seed, int64_t nd) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  gdn_shape s = {B, T, 1, 1, 4, 4};
  gdn_synth_opts o = {seed, 0, 0};
  ck_assert_int_eq(gdn_synth_generate(in, &s, &o, &e), GDN_OK);
  ck_assert_int_eq(gdn_synth_segments(in, seed, nd, &e), GDN_OK);
}

/* Ids 1, 2, ... in order, every document at least one token, a padding tail
 * of max(1, T/32) tokens, at most nd documents; deterministic per seed; the
 * three kinds of boundary all occur over a few seeds (a seam of T/d for d in
 * {2, 3, 4, 8}, a multiple of 64, inside a 16-chunk). */
START_TEST(ids_and_boundary_kinds) {
  int seen[3] = {0, 0, 0};
  for (uint64_t seed = 0; seed < 8; seed++) {
    const int64_t T = 1536, B = 2, nd = 7;
    gdn_inputs a, b;
    seg(&a, B, T, seed, nd);
    seg(&b, B, T, seed, nd);
    ck_assert_mem_eq(a.seg, b.seg, (size_t)(B * T) * sizeof(int32_t));
    for (int64_t r = 0; r < B; r++) {
      const int32_t *sg = a.seg + r * T;
      ck_assert_int_eq(sg[0], 1);
      for (int64_t t = T - T / 32; t < T; t++) ck_assert_int_eq(sg[t], 0);
      ck_assert_int_ne(sg[T - T / 32 - 1], 0);
      for (int64_t t = 1; t < T - T / 32; t++) {
        ck_assert(sg[t] == sg[t - 1] || sg[t] == sg[t - 1] + 1);
        if (sg[t] == sg[t - 1]) continue;
        if (t % 64 == 0) seen[1]++;
        if (t % 16) seen[2]++;
        for (int d = 2; d <= 8; d++)
          if ((d == 2 || d == 3 || d == 4 || d == 8) && (t * d) % T == 0) {
            seen[0]++;
            break;
          }
      }
      ck_assert_int_le(sg[T - T / 32 - 1], nd);
      ck_assert_int_ge(sg[T - T / 32 - 1], 2);
    }
    gdn_inputs_clear(&a);
    gdn_inputs_clear(&b);
  }
  ck_assert_int_gt(seen[0], 0);
  ck_assert_int_gt(seen[1], 0);
  ck_assert_int_gt(seen[2], 0);
  /* negative control: another seed draws other boundaries */
  gdn_inputs a, b;
  seg(&a, 1, 1536, 1, 7);
  seg(&b, 1, 1536, 2, 7);
  ck_assert(memcmp(a.seg, b.seg, 1536 * sizeof(int32_t)) != 0);
  gdn_inputs_clear(&a);
  gdn_inputs_clear(&b);
}
END_TEST

START_TEST(one_document_and_refusals) {
  gdn_inputs a;
  seg(&a, 1, 64, 3, 1);
  ck_assert_ptr_null(a.seg); /* one document: no segment ids at all */
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_synth_segments(&a, 3, 65, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "--documents 65"));
  ck_assert_ptr_null(a.seg);
  /* a negative id is refused by the value check, naming where */
  ck_assert_int_eq(gdn_synth_segments(&a, 3, 4, &e), GDN_OK);
  a.seg[10] = -2;
  ck_assert_int_eq(gdn_inputs_check_values(&a, NULL, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "segment_ids"));
  ck_assert_ptr_nonnull(strstr(e.msg, "t=10"));
  /* copies carry ids and packing */
  a.seg[10] = 1;
  a.packing = GDN_PACKING_RESET;
  gdn_inputs c;
  gdn_inputs_init(&c);
  ck_assert_int_eq(gdn_inputs_copy(&c, &a, &e), GDN_OK);
  ck_assert_mem_eq(c.seg, a.seg, 64 * sizeof(int32_t));
  ck_assert_int_eq(c.packing, GDN_PACKING_RESET);
  gdn_inputs_clear(&c);
  gdn_inputs_clear(&a);
  int p;
  ck_assert_int_eq(gdn_packing_parse("reset", &p, &e), GDN_OK);
  ck_assert_int_eq(p, GDN_PACKING_RESET);
  ck_assert_int_eq(gdn_packing_parse("none", &p, &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "--packing 'none'"));
}
END_TEST

/* The kinds, from the table in gdn_inputs.h. */
START_TEST(token_kinds) {
  gdn_inputs a;
  seg(&a, 1, 8, 0, 1);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_inputs_token_kind(&a, 0, 3), GDN_TOKEN_PLAIN); /* no ids */
  ck_assert_int_eq(gdn_inputs_alloc_seg(&a, &e), GDN_OK);
  const int32_t ids[8] = {1, 1, 2, 2, 0, 0, 3, 3};
  memcpy(a.seg, ids, sizeof ids);
  const int leak[8] = {0, 0, 0, 0, 1, 1, 0, 0}, reset[8] = {0, 0, 2, 0, 1, 1, 2, 0};
  for (int t = 0; t < 8; t++) ck_assert_int_eq(gdn_inputs_token_kind(&a, 0, t), leak[t]);
  a.packing = GDN_PACKING_RESET;
  for (int t = 0; t < 8; t++) ck_assert_int_eq(gdn_inputs_token_kind(&a, 0, t), reset[t]);
  gdn_inputs_clear(&a);
}
END_TEST

CKR_MAIN("segments", "all", 0, ids_and_boundary_kinds, one_document_and_refusals, token_kinds)
