/* fixture_plant: one output of a fixture planted wrong, in place, for the
 * layer-dump workflow's negative control (scripts/layer-dump.sh): what a
 * TPU run that went wrong at one head and one token range would have
 * written.
 *
 *   build/bench/fixture_plant FILE.h5 NAME HEAD T0 T1 REL
 *
 * Multiplies /outputs/NAME/o[b, t, HEAD, :] by (1 + REL) for every batch
 * row b and token t in [T0, T1), read and written back by hyperslab (memory:
 * the slab only), in the dataset's own type (float32, or bfloat16 as 16-bit
 * words: converted through float32 and rounded to nearest even).  A value
 * of 0 stays 0, so REL moves only nonzero elements.  Prints what it changed.
 * Exit 2 on a bad argument or a dataset that is not there, naming it. */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(const char *why) {
  fprintf(stderr, "fixture_plant: %s\nusage: fixture_plant FILE.h5 NAME HEAD T0 T1 REL\n", why);
  return 2;
}

static float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* The slab's n values scaled by (1 + rel) in place; the count changed. */
static long scale(void *buf, size_t n, int bf16, double rel) {
  long changed = 0;
  for (size_t i = 0; i < n; i++) {
    float *f = (float *)buf + i;
    uint16_t *h = (uint16_t *)buf + i;
    const float x = bf16 ? bf16_to_f32(*h) : *f, y = (float)((double)x * (1.0 + rel));
    if (y != x) changed++;
    if (bf16) *h = f32_to_bf16(y);
    else *f = y;
  }
  return changed;
}

static int plant(hid_t d, long head, long t0, long t1, double rel, const char *name) {
  hid_t sp = H5Dget_space(d), ty = H5Dget_type(d);
  hsize_t dims[4];
  if (H5Sget_simple_extent_ndims(sp) != 4 || H5Sget_simple_extent_dims(sp, dims, NULL) != 4)
    return usage("the output's o is not rank 4 (B, T, Hv, Dv)");
  if (head < 0 || (hsize_t)head >= dims[2] || t0 < 0 || t1 <= t0 || (hsize_t)t1 > dims[1])
    return usage("HEAD or the token range [T0, T1) is outside the output's shape");
  const int bf16 = H5Tget_size(ty) == 2;
  const hsize_t start[4] = {0, (hsize_t)t0, (hsize_t)head, 0}, count[4] = {dims[0], (hsize_t)(t1 - t0), 1, dims[3]};
  const size_t n = (size_t)(count[0] * count[1] * count[3]);
  void *buf = malloc(n * (bf16 ? 2 : 4));
  hid_t ms = H5Screate_simple(4, count, NULL), mt = bf16 ? H5T_NATIVE_UINT16 : H5T_NATIVE_FLOAT;
  int rc = !buf || H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
           H5Dread(d, mt, ms, sp, H5P_DEFAULT, buf) < 0;
  long changed = rc ? 0 : scale(buf, n, bf16, rel);
  if (!rc) rc = H5Dwrite(d, mt, ms, sp, H5P_DEFAULT, buf) < 0;
  if (!rc)
    printf("planted: /outputs/%s/o head %ld tokens [%ld, %ld) x (1 + %g): %ld of %zu values changed\n", name, head,
           t0, t1, rel, changed, n);
  free(buf);
  H5Sclose(ms);
  H5Sclose(sp);
  H5Tclose(ty);
  return rc ? 3 : 0;
}

int main(int argc, char **argv) {
  if (argc != 7) return usage("expected 6 arguments");
  char *end;
  const long head = strtol(argv[3], &end, 10), t0 = strtol(argv[4], &end, 10), t1 = strtol(argv[5], &end, 10);
  const double rel = strtod(argv[6], &end);
  if (*end) return usage("REL is not a number");
  char ds[512];
  snprintf(ds, sizeof ds, "/outputs/%s/o", argv[2]);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(argv[1], H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) return usage("cannot open FILE.h5 for writing");
  hid_t d = H5Lexists(f, ds, H5P_DEFAULT) > 0 ? H5Dopen2(f, ds, H5P_DEFAULT) : -1;
  int rc = d < 0 ? (fprintf(stderr, "fixture_plant: %s: no dataset %s\n", argv[1], ds), 2) : plant(d, head, t0, t1, rel, argv[2]);
  if (d >= 0) H5Dclose(d);
  H5Fclose(f);
  return rc;
}
