#include "kern_config.h"

#include <inttypes.h>
#include <string.h>

void kern_config_init(kern_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->dtype = GDN_DTYPE_F32;
  cfg->matmul = KERN_MATMUL_IEEE;
  cfg->ftz = 0;
  cfg->chunk = 64;
  cfg->devices = 1;
  cfg->prefix = KERN_PREFIX_SEQUENTIAL;
  cfg->shard = KERN_SHARD_TOKENS;
}

static const char *const matmul_names[] = {"ieee", "default", "high", "highest"};
static const char *const prefix_names[] = {"sequential", "associative-scan", "hillis-steele"};

/* The enum value a name stands for: its index in names[0..n), -1 if none. */
static int name_index(const char *s, const char *const *names, int n) {
  for (int i = 0; s && i < n; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

const char *kern_matmul_name(kern_matmul m) {
  return (unsigned)m < 4 ? matmul_names[m] : "?";
}

int kern_matmul_parse(const char *s, kern_matmul *out, gdn_error *e) {
  const int i = name_index(s, matmul_names, 4);
  if (i >= 0) {
    *out = (kern_matmul)i;
    return GDN_OK;
  }
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "--matmul-precision '%s': unknown mode; expected default, high, highest or ieee",
                       s ? s : "");
}

const char *kern_prefix_name(kern_prefix p) {
  return (unsigned)p < 3 ? prefix_names[p] : "?";
}

int kern_prefix_parse(const char *s, kern_prefix *out, gdn_error *e) {
  const int i = name_index(s, prefix_names, 3);
  if (i >= 0) {
    *out = (kern_prefix)i;
    return GDN_OK;
  }
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "--prefix '%s': unknown schedule; expected sequential, associative-scan or "
                       "hillis-steele",
                       s ? s : "");
}

static const char *const shard_names[] = {"tokens", "chunks"};
static const char *const solve_names[] = {"substitution", "xla-expander"};

const char *kern_solve_name(kern_solve m) { return (unsigned)m < 2 ? solve_names[m] : "?"; }

int kern_solve_parse(const char *s, kern_solve *out, gdn_error *e) {
  for (int i = 0; i < 2; i++)
    if (s && !strcmp(s, solve_names[i])) {
      *out = (kern_solve)i;
      return GDN_OK;
    }
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "--solve '%s': unknown solve; expected substitution or xla-expander",
                       s ? s : "");
}

const char *kern_shard_name(kern_shard m) { return (unsigned)m < 2 ? shard_names[m] : "?"; }

int kern_shard_parse(const char *s, kern_shard *out, gdn_error *e) {
  for (int i = 0; i < 2; i++)
    if (s && !strcmp(s, shard_names[i])) {
      *out = (kern_shard)i;
      return GDN_OK;
    }
  return gdn_error_set(e, GDN_ERR_INPUT, "--shard '%s': unknown mode; expected tokens or chunks",
                       s ? s : "");
}

gdn_dtype kern_output_dtype(const kern_config *cfg, unsigned input_bf16_mask) {
  if (cfg->dtype == GDN_DTYPE_F64) return GDN_DTYPE_F64;
  return (input_bf16_mask & 1u) ? GDN_DTYPE_BF16 : GDN_DTYPE_F32;
}

/* Token sharding: D must divide T.  The nearest valid T is the multiple of D
 * closest to T (both when T lies half-way; D itself when T < D). */
static int tokens_validate(int64_t D, int64_t T, gdn_error *e) {
  if (T % D == 0) return GDN_OK;
  const int64_t lo = T / D * D, hi = lo + D;
  if (lo == 0 || hi - T < T - lo)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "--devices %" PRId64 " does not divide T = %" PRId64
                         " (--shard tokens gives every device T/D tokens): the nearest valid T is %" PRId64,
                         D, T, hi);
  if (T - lo < hi - T)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "--devices %" PRId64 " does not divide T = %" PRId64
                         " (--shard tokens gives every device T/D tokens): the nearest valid T is %" PRId64,
                         D, T, lo);
  return gdn_error_set(e, GDN_ERR_INPUT,
                       "--devices %" PRId64 " does not divide T = %" PRId64
                       " (--shard tokens gives every device T/D tokens): the nearest valid T is %" PRId64
                       " or %" PRId64,
                       D, T, lo, hi);
}

int kern_config_validate(const kern_config *cfg, const gdn_shape *s, gdn_error *e) {
  if (cfg->chunk < 1)
    return gdn_error_set(e, GDN_ERR_INPUT, "--chunk %" PRId64 ": the chunk size must be at least 1",
                         cfg->chunk);
  if (cfg->devices < 1)
    return gdn_error_set(e, GDN_ERR_INPUT, "--devices %" PRId64 ": the device count must be at least 1",
                         cfg->devices);
  if ((unsigned)cfg->shard > KERN_SHARD_CHUNKS)
    return gdn_error_set(e, GDN_ERR_INPUT, "shard mode %d: unknown (tokens or chunks)",
                         (int)cfg->shard);
  if (cfg->shard == KERN_SHARD_TOKENS) return tokens_validate(cfg->devices, s->T, e);
  int64_t n = gdn_shape_chunks(s, cfg->chunk);
  if (cfg->devices > n)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "--devices %" PRId64 " is more than the %" PRId64 " chunk%s of T = %" PRId64
                         " at chunk size %" PRId64 ": every device needs at least one whole chunk",
                         cfg->devices, n, n == 1 ? "" : "s", s->T, cfg->chunk);
  return GDN_OK;
}
