#include "kern_num.h"

#include <stdio.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define KERN_HAVE_MXCSR 1
#define KERN_MXCSR_FTZ 0x8000u /* flush results to zero */
#define KERN_MXCSR_DAZ 0x0040u /* denormal operands are zero */
#else
#define KERN_HAVE_MXCSR 0
#endif

int kern_num_init(kern_num *num, const kern_config *cfg, const char *who, gdn_error *e) {
  num->dtype = cfg->dtype;
  num->matmul = cfg->matmul;
  num->ftz = cfg->ftz ? 1 : 0;
  num->round_mask = 0;
  num->solve = cfg->solve;
  if ((unsigned)cfg->solve > (unsigned)KERN_SOLVE_XLA_EXPANDER)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: solve %d is not one of substitution, xla-expander",
                         who, (int)cfg->solve);
  if (cfg->dtype != GDN_DTYPE_F32 && cfg->dtype != GDN_DTYPE_F64 && cfg->dtype != GDN_DTYPE_BF16)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: compute dtype %d is not one of float32, "
                         "bfloat16, float64", who, (int)cfg->dtype);
  if ((unsigned)cfg->matmul > (unsigned)KERN_MATMUL_HIGHEST)
    return gdn_error_set(e, GDN_ERR_INPUT, "%s: matmul precision %d is not one of ieee, default, "
                         "high, highest", who, (int)cfg->matmul);
  if (cfg->dtype == GDN_DTYPE_F64) {
    num->matmul = KERN_MATMUL_IEEE;
    num->ftz = 0;
    return GDN_OK;
  }
  if (cfg->dtype == GDN_DTYPE_BF16) num->round_mask = KERN_RP_BF16_ALL;
  if (num->ftz && !KERN_HAVE_MXCSR)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "%s: flush-to-zero (ftz) is implemented with the x86 MXCSR and is not "
                         "available on this architecture", who);
  return GDN_OK;
}

int kern_num_setup(kern_num *num, const gdn_inputs *in, const kern_config *cfg, const char *who,
                   int chunked, gdn_error *e) {
  int rc = gdn_shape_validate(&in->shape, e);
  if (!rc && chunked) rc = kern_config_validate(cfg, &in->shape, e);
  if (rc) {
    gdn_error_prefix(e, "%s: ", who);
    return rc;
  }
  return kern_num_init(num, cfg, who, e);
}

static const char *const mm_words[] = {
    "plain IEEE float32 products (fma)",
    "1 bf16 pass (operands rounded to bf16), f32 accumulation",
    "3 bf16 passes [bf16_3x: hi*hi + hi*lo + lo*hi], f32 accumulation",
    "6 bf16 passes [bf16_6x: hi*hi + hi*mid + mid*hi + hi*lo + mid*mid + lo*hi], f32 "
    "accumulation",
};

int kern_num_describe(const kern_config *cfg, char *buf, size_t cap, gdn_error *e) {
  kern_num num;
  int rc = kern_num_init(&num, cfg, "kern_num_describe", e);
  if (rc) return rc;
  if (!buf || cap == 0) return GDN_OK;
  if (cfg->dtype == GDN_DTYPE_F64) {
    char mm[160] = "";
    if (cfg->matmul != KERN_MATMUL_IEEE)
      snprintf(mm, sizeof mm, " (--matmul-precision %s ignored: float64 products are plain IEEE)",
               kern_matmul_name(cfg->matmul));
    snprintf(buf, cap, "float64 compute; matmul ieee%s; ftz %s", mm,
             cfg->ftz ? "ignored (float64)" : "off");
    return GDN_OK;
  }
  snprintf(buf, cap, "%s; matmul %s: %s%s; ftz %s",
           cfg->dtype == GDN_DTYPE_BF16
               ? "bfloat16 compute (MaxText rounding points: q, k, v, beta, scale, q*scale, "
                 "k*beta, v*beta, (k beta) K^T, U, W, Q K^T; g and the state float32)"
               : "float32 compute",
           kern_matmul_name(num.matmul), mm_words[num.matmul],
           cfg->dtype == GDN_DTYPE_BF16 && num.matmul != KERN_MATMUL_IEEE
               ? " (the bf16 x bf16 products (k beta) K^T and Q K^T are one pass)"
               : "",
           num.ftz ? "on (subnormal inputs and every result flushed)" : "off");
  return GDN_OK;
}

/* Not inlined (kern_num.h): the call is the barrier the compiler respects. */
__attribute__((noinline)) unsigned kern_fpenv_enter(const kern_num *num) {
#if KERN_HAVE_MXCSR
  if (!num->ftz) return 0;
  unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | KERN_MXCSR_FTZ | KERN_MXCSR_DAZ);
  return saved;
#else
  (void)num;
  return 0;
#endif
}

__attribute__((noinline)) void kern_fpenv_leave(const kern_num *num, unsigned saved) {
#if KERN_HAVE_MXCSR
  if (num->ftz) _mm_setcsr(saved);
#else
  (void)num;
  (void)saved;
#endif
}
