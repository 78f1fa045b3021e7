/* The chunked KDA kernel's bits pinned: a hash of o and ht (their float64
 * bytes, FNV-1a) of kern_kda_chunk and kern_kda_affine over shapes, seeds,
 * chunk sizes, both float types and every forward mutant, against the
 * values the kernel gave before its inner loops were rewritten for speed
 * (kern_kda_chunk_tmpl.h: the exps hoisted, the decay rows laid out per
 * channel).  A rewrite that moves one rounding changes a hash.  The float32
 * exps are glibc's expf bit for bit (kern_expf.h), so the pins hold where
 * tests/kernels/test_kern_expf passes. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../check_runner.h"
#include "../test_util_synth.h"
#include "gdn_chgate.h"
#include "gdn_threads.h"
#include "kern_kda.h"

typedef struct bits_case {
  gdn_shape s;
  uint64_t seed;
  int64_t C, D; /* D = 1: kern_kda_chunk; D >= 2: kern_kda_affine */
  gdn_dtype dt;
  kern_kda_mutant m;
  uint64_t pin;
} bits_case;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
  return h;
}

/* GQA (Hv = 2 Hk), Dk != Dv, h0, T not a multiple of 16 or 64; Dk = Dv =
 * 128 as the bench runs it. */
static const gdn_shape S1 = {1, 150, 1, 2, 16, 12}, S2 = {2, 200, 2, 4, 32, 24}, S3 = {1, 136, 1, 1, 128, 128};
#define F32 GDN_DTYPE_F32
#define F64 GDN_DTYPE_F64

static const bits_case CASES[] = {
    {S1, 1, 64, 1, F32, KERN_KDA_MUTANT_NONE, 0xf776136cf8e15165ull},
    {S1, 2, 64, 1, F32, KERN_KDA_MUTANT_NONE, 0x7eb380180393ccb6ull},
    {S1, 1, 17, 1, F32, KERN_KDA_MUTANT_NONE, 0x8611bafb782c944bull},
    {S1, 1, 33, 1, F64, KERN_KDA_MUTANT_NONE, 0xf1163d91e13c49f5ull},
    {S2, 3, 64, 1, F32, KERN_KDA_MUTANT_NONE, 0x023807cad78531f5ull},
    {S2, 3, 64, 1, F64, KERN_KDA_MUTANT_NONE, 0xe89ac73a2f9fbe33ull},
    {S2, 4, 16, 1, F32, KERN_KDA_MUTANT_NONE, 0xb34fe4d92a56c43dull},
    {S2, 5, 64, 2, F32, KERN_KDA_MUTANT_NONE, 0xb786720d6bed6dedull},
    {S2, 5, 64, 4, F64, KERN_KDA_MUTANT_NONE, 0xbdc7ee9eb00b45aeull},
    {S3, 6, 64, 1, F32, KERN_KDA_MUTANT_NONE, 0xd40eb86c2f911f4cull},
    {S3, 7, 64, 1, F64, KERN_KDA_MUTANT_NONE, 0xed1e7b353dc204c7ull},
    {S3, 6, 64, 2, F32, KERN_KDA_MUTANT_NONE, 0xe161d264372fc42bull},
    {S1, 8, 64, 1, F32, KERN_KDA_MUTANT_GATE_VALUE_AXIS, 0x8347fb8bbf98e43cull},
    {S1, 8, 64, 1, F32, KERN_KDA_MUTANT_GATE_AFTER_UPDATE, 0xfbecdfbec7435af9ull},
    {S1, 8, 64, 1, F32, KERN_KDA_MUTANT_CUMSUM_ACROSS_CHUNKS, 0xbf1c2e60f72c117eull},
    {S1, 8, 64, 1, F32, KERN_KDA_MUTANT_GATE_OTHER_HEAD, 0x6f0518c8b6434bffull},
    {S1, 8, 64, 1, F32, KERN_KDA_MUTANT_SUBCHUNK_OFF_BY_ONE, 0xe6ba99af22e1d53full},
};

static uint64_t case_hash(const bits_case *c) {
  gdn_inputs in = tsu_inputs(c->s, GDN_SYNTH_H0, c->seed);
  gdn_chgate g;
  gdn_chgate_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&g, &c->s, c->seed, &e), GDN_OK);
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.dtype = c->dt;
  cfg.chunk = c->C;
  cfg.devices = c->D;
  gdn_outputs out;
  gdn_outputs_init(&out);
  const int rc = c->D > 1 ? kern_kda_affine(&in, &g, &cfg, c->m, &out, &e) : kern_kda_chunk(&in, &g, &cfg, c->m, &out, &e);
  ck_assert_msg(rc == GDN_OK, "%s", e.msg);
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv(h, out.o, gdn_shape_numel_v(&c->s) * sizeof(double));
  h = fnv(h, out.ht, gdn_shape_numel_state(&c->s) * sizeof(double));
  gdn_outputs_clear(&out);
  gdn_chgate_clear(&g);
  gdn_inputs_clear(&in);
  return h;
}

START_TEST(test_bits_pinned) {
  gdn_threads_set(1);
  const uint64_t h = case_hash(&CASES[_i]);
  ck_assert_msg(h == CASES[_i].pin, "case %d: hash 0x%016" PRIx64 ", pinned 0x%016" PRIx64, _i, h, CASES[_i].pin);
}
END_TEST

/* The pins hold at 2 threads too (items in parallel; 8 items here). */
START_TEST(test_bits_two_threads) {
  gdn_threads_set(2);
  const uint64_t h = case_hash(&CASES[7]);
  gdn_threads_set(1);
  ck_assert_msg(h == CASES[7].pin, "2 threads: hash 0x%016" PRIx64 ", pinned 0x%016" PRIx64, h, CASES[7].pin);
}
END_TEST

CKR_MAIN_TABLE("kernels", "kda_bits", 300, CASES, (test_bits_pinned), test_bits_two_threads)
