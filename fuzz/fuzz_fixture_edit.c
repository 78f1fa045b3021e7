/* The fixture loader's own checks, fuzzed at full speed: the input is a
 * list of edits applied through the HDF5 API to a valid base fixture --
 * attributes of any type and value set or deleted, datasets replaced with
 * other dtypes, ranks and dimensions (up to exabytes declared, chunked and
 * unwritten), values poked (NaN, Inf, huge, negative), links deleted, extra
 * outputs with odd names -- then fix_load strictly and leniently.  The file
 * stays well-formed HDF5, so HDF5 itself does not crash (fuzz_fixture
 * covers raw bytes, behind the probe) and every finding is ours.
 * Invariants as fuzz_fixture, plus: a loaded fixture passes
 * fix_fixture_check, the writer's own validation, and the head-group reader
 * (fix_group.h) opens it too, each key head's slab that part of the load. */
#include <hdf5.h>
#include <math.h>
#include <unistd.h>

#include "fix.h"
#include "fix_group.h"
#include "fuzz_util.h"
#include "gdn_alloc.h"

static char base_path[64], work_path[64];
static unsigned char *base_img;
static size_t base_n;

typedef struct rd {
  const uint8_t *p;
  size_t n;
} rd;
static unsigned u8(rd *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}
static uint64_t u64(rd *r) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | u8(r);
  return v;
}

static const char *const objects[] = {"/", "/inputs", "/outputs", "/outputs/x", "/oracle"};
static const char *const attrs[] = {"gdn_fixture_version", "source", "chunk_size", "l2norm_in_kernel", "scale",
                                    "model", "layer", "implementation", "devices", "prefix", "matmul_precision",
                                    "compute_dtype", "platform", "precision_bits", "certified_bits", "inputs_sha256",
                                    "dtype", "notes"};
static const char *const dsets[] = {"/inputs/q", "/inputs/k", "/inputs/v", "/inputs/g", "/inputs/beta", "/inputs/h0",
                                    "/outputs/x/o", "/outputs/x/ht", "/oracle/o", "/oracle/ht"};
static const char *const links[] = {"/inputs", "/outputs", "/outputs/x", "/oracle", "/inputs/q", "/inputs/h0",
                                    "/outputs/x/ht", "/oracle/o"};
#define N(a) (sizeof a / sizeof a[0])

static double value(rd *r) {
  switch (u8(r) % 10) {
  case 0: return NAN;
  case 1: return INFINITY;
  case 2: return -INFINITY;
  case 3: return 1e300;
  case 4: return -1.0;
  case 5: return 0.0;
  case 6: return 2.5;
  case 7: return (double)(int64_t)u64(r);
  default: {
    uint64_t b = u64(r);
    double d;
    memcpy(&d, &b, 8);
    return d;
  }
  }
}

static void set_attr(hid_t f, rd *r) {
  hid_t o = H5Oopen(f, objects[u8(r) % N(objects)], H5P_DEFAULT);
  if (o < 0) return;
  const char *name = attrs[u8(r) % N(attrs)];
  if (H5Aexists(o, name) > 0) H5Adelete(o, name);
  unsigned kind = u8(r) % 7;
  hsize_t two = 2;
  hid_t s = kind == 6 ? H5Screate_simple(1, &two, NULL) : H5Screate(H5S_SCALAR);
  hid_t t = -1, a = -1;
  char str[64];
  size_t sl = u8(r) % sizeof str;
  for (size_t i = 0; i < sl; i++) str[i] = (char)u8(r);
  str[sl] = '\0';
  const char *choices[] = {"synthetic", "tpu-dump", "bfloat16", "float32", "highest", "sequential", "scan",
                           "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"};
  if (u8(r) & 1) snprintf(str, sizeof str, "%s", choices[u8(r) % N(choices)]);
  long long iv = (long long)u64(r);
  double dv = value(r);
  switch (kind) {
  case 0: /* int64 */
  case 6:
    t = H5Tcopy(H5T_STD_I64LE);
    a = H5Acreate2(o, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) {
      long long v2[2] = {iv, iv};
      H5Awrite(a, H5T_NATIVE_LLONG, v2);
    }
    break;
  case 1: /* double */
    t = H5Tcopy(H5T_IEEE_F64LE);
    a = H5Acreate2(o, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Awrite(a, H5T_NATIVE_DOUBLE, &dv);
    break;
  case 2: { /* variable-length string */
    t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    a = H5Acreate2(o, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    const char *p = str;
    if (a >= 0) H5Awrite(a, t, &p);
    break;
  }
  case 3: /* fixed-length string, space or NUL padded */
    t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, sl ? sl : 1);
    H5Tset_strpad(t, u8(r) & 1 ? H5T_STR_SPACEPAD : H5T_STR_NULLPAD);
    a = H5Acreate2(o, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Awrite(a, t, str);
    break;
  case 4: /* a small unsigned integer */
    t = H5Tcopy(H5T_STD_U8LE);
    a = H5Acreate2(o, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) {
      unsigned char c = (unsigned char)iv;
      H5Awrite(a, H5T_NATIVE_UCHAR, &c);
    }
    break;
  default: /* float32 */
    t = H5Tcopy(H5T_IEEE_F32BE);
    a = H5Acreate2(o, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) {
      float fv = (float)dv;
      H5Awrite(a, H5T_NATIVE_FLOAT, &fv);
    }
  }
  if (a >= 0) H5Aclose(a);
  if (t >= 0) H5Tclose(t);
  H5Sclose(s);
  H5Oclose(o);
}

static void replace_dataset(hid_t f, rd *r) {
  const char *name = dsets[u8(r) % N(dsets)];
  if (H5Lexists(f, name, H5P_DEFAULT) > 0) H5Ldelete(f, name, H5P_DEFAULT);
  int rank = (int)(u8(r) % 6);
  hsize_t dims[5], chunk[5];
  int huge = u8(r) % 4 == 0;
  for (int i = 0; i < rank; i++) {
    dims[i] = huge ? (hsize_t)1 << (u8(r) % 40) : u8(r) % 9;
    chunk[i] = 1;
  }
  hid_t ft;
  switch (u8(r) % 6) {
  case 0: ft = H5T_IEEE_F32LE; break;
  case 1: ft = H5T_IEEE_F32BE; break;
  case 2: ft = H5T_IEEE_F64LE; break;
  case 3: ft = H5T_STD_U16LE; break;
  case 4: ft = H5T_STD_U16BE; break;
  default: ft = H5T_STD_I32LE; break;
  }
  hid_t s = rank ? H5Screate_simple(rank, dims, NULL) : H5Screate(H5S_SCALAR);
  if (s < 0) return;
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  int chunked = huge || u8(r) % 2;
  int any_zero = 0;
  for (int i = 0; i < rank; i++) any_zero |= dims[i] == 0;
  if (chunked && rank && !any_zero) H5Pset_chunk(dcpl, rank, chunk);
  else chunked = 0;
  hid_t d = H5Dcreate2(f, name, ft, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (d >= 0) {
    if (!huge) {
      hssize_t n = H5Sget_simple_extent_npoints(s);
      if (n > 0 && n < 100000) {
        double *buf = malloc((size_t)n * sizeof *buf);
        double v = value(r);
        for (hssize_t i = 0; i < n; i++) buf[i] = (i % 5 == 0) ? v : 0.25;
        H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        free(buf);
      }
    }
    if ((ft == H5T_STD_U16LE || ft == H5T_STD_U16BE) && u8(r) % 4) {
      hid_t t = H5Tcopy(H5T_C_S1);
      H5Tset_size(t, H5T_VARIABLE);
      hid_t as = H5Screate(H5S_SCALAR);
      hid_t a = H5Acreate2(d, "dtype", t, as, H5P_DEFAULT, H5P_DEFAULT);
      const char *v = u8(r) % 3 ? "bfloat16" : "float16";
      if (a >= 0) H5Awrite(a, t, &v), H5Aclose(a);
      H5Sclose(as);
      H5Tclose(t);
    }
    H5Dclose(d);
  }
  H5Pclose(dcpl);
  H5Sclose(s);
}

static void poke(hid_t f, rd *r) {
  hid_t d = H5Dopen2(f, dsets[u8(r) % N(dsets)], H5P_DEFAULT);
  if (d < 0) return;
  hid_t fs = H5Dget_space(d);
  hssize_t n = H5Sget_simple_extent_npoints(fs);
  /* Not into a huge declared dataset: writing one element there makes HDF5
   * build the chunk index of the whole extent (gigabytes for 2^31 chunks),
   * a cost of the edit, not of the loader under test. */
  if (n > 0 && n <= (1 << 20) && H5Sget_simple_extent_ndims(fs) > 0) {
    hsize_t at = u64(r) % (hsize_t)n, coord[8], dims[8];
    int rank = H5Sget_simple_extent_ndims(fs);
    H5Sget_simple_extent_dims(fs, dims, NULL);
    for (int k = rank - 1; k >= 0; k--) coord[k] = at % dims[k], at /= dims[k];
    H5Sselect_elements(fs, H5S_SELECT_SET, 1, coord);
    hsize_t one = 1;
    hid_t ms = H5Screate_simple(1, &one, NULL);
    double v = value(r);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, &v);
    H5Sclose(ms);
  }
  H5Sclose(fs);
  H5Dclose(d);
}

static void add_output(hid_t f, rd *r) {
  char name[24];
  size_t l = 1 + u8(r) % 20;
  for (size_t i = 0; i < l; i++) {
    unsigned c = u8(r);
    name[i] = (char)(c == '/' || c == 0 || c == '.' ? 'a' : c);
  }
  name[l] = '\0';
  if (H5Lexists(f, "outputs", H5P_DEFAULT) <= 0) return;
  hid_t g = H5Gopen2(f, "outputs", H5P_DEFAULT);
  if (g < 0) return;
  hid_t n = H5Gcreate2(g, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (n >= 0) {
    if (u8(r) & 1) H5Ocopy(f, "/outputs/x/o", n, "o", H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(n);
  }
  H5Gclose(g);
}

static void remove_work(void) { unlink(work_path); }

static void make_base(void) {
  const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"; /* memory, where there is one */
  snprintf(base_path, sizeof base_path, "%s/fuzz-fixture-edit-%d.h5", tmp, (int)getpid());
  snprintf(work_path, sizeof work_path, "%s/fuzz-fixture-edit-%d-w.h5", tmp, (int)getpid());
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture fx;
  fix_fixture_init(&fx);
  gdn_shape s = {1, 3, 1, 2, 2, 2};
  if (gdn_inputs_alloc(&fx.inputs, &s, 1, &e)) abort();
  gdn_inputs *in = &fx.inputs;
  for (size_t i = 0; i < gdn_shape_numel_qk(&s); i++) in->q[i] = 0.5f, in->k[i] = -0.25f;
  for (size_t i = 0; i < gdn_shape_numel_v(&s); i++) in->v[i] = 0.125f * (float)i;
  for (size_t i = 0; i < gdn_shape_numel_gate(&s); i++) in->g[i] = -0.5f, in->beta[i] = 0.75f;
  in->l2norm_in_kernel = 1;
  fix_set_string(&fx.source, "synthetic", &e);
  fx.chunk_size = 2;
  fix_output *o;
  if (fix_fixture_add_output(&fx, "x", &o, &e)) abort();
  o->out.shape = s;
  o->out.dtype = GDN_DTYPE_F32;
  o->out.o = gdn_calloc(gdn_shape_numel_v(&s), sizeof(double), "o", &e);
  o->out.ht = gdn_calloc(gdn_shape_numel_state(&s), sizeof(double), "ht", &e);
  o->has_ht = 1;
  fix_set_string(&o->implementation, "affine-prefix", &e);
  fix_set_string(&o->prefix, "sequential", &e);
  o->devices = 2;
  o->missing = FIX_ATTR_MATMUL_PRECISION | FIX_ATTR_COMPUTE_DTYPE | FIX_ATTR_PLATFORM;
  if (gdn_outputs_alloc(&fx.oracle.out, &s, GDN_DTYPE_F64, &e)) abort();
  fx.oracle.present = fx.oracle.fresh = 1;
  fx.oracle.precision_bits = 128;
  fx.oracle.certified_bits = 100;
  if (fix_inputs_sha256(in, fx.oracle.inputs_sha256, &e)) abort();
  if (fix_write(&fx, base_path, &e)) {
    fprintf(stderr, "fuzz_fixture_edit: base: %s\n", e.msg);
    abort();
  }
  fix_fixture_clear(&fx);
  FILE *f = fopen(base_path, "rb");
  fseek(f, 0, SEEK_END);
  base_n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  base_img = malloc(base_n);
  if (fread(base_img, 1, base_n, f) != base_n) abort();
  fclose(f);
  unlink(base_path);
  atexit(remove_work);
}

/* Heads [h0, h0 + hs) of a whole array (outer x per heads x inner
 * elements of es bytes) against a slab of those heads: written here again,
 * apart from fixtures/fix_slab.c, so the comparison is independent. */
static int heads_equal(const void *full, const void *slab, size_t es, int64_t outer, int64_t per, int64_t h0,
                       int64_t hs, int64_t inner) {
  if (!full || !slab) return full == slab;
  for (int64_t o = 0; o < outer; o++)
    if (memcmp((const char *)full + (size_t)((o * per + h0) * inner) * es,
               (const char *)slab + (size_t)(o * hs * inner) * es, (size_t)(hs * inner) * es))
      return 0;
  return 1;
}

/* Key head k's slab against the whole load: inputs, outputs, oracle. */
static void check_slab(const fix_fixture *fx, const fix_fixture *sl, int64_t k) {
  const gdn_shape *s = &fx->inputs.shape;
  const gdn_inputs *a = &fx->inputs, *b = &sl->inputs;
  const int64_t r = s->Hv / s->Hk, BT = s->B * s->T, st = s->Dk * s->Dv;
  FUZZ_CHECK(heads_equal(a->q, b->q, 4, BT, s->Hk, k, 1, s->Dk) && heads_equal(a->k, b->k, 4, BT, s->Hk, k, 1, s->Dk),
             "key head %lld: q or k", (long long)k);
  FUZZ_CHECK(heads_equal(a->v, b->v, 4, BT, s->Hv, k * r, r, s->Dv), "key head %lld: v", (long long)k);
  FUZZ_CHECK(heads_equal(a->g, b->g, 4, BT, s->Hv, k * r, r, 1) && heads_equal(a->beta, b->beta, 4, BT, s->Hv, k * r, r, 1),
             "key head %lld: g or beta", (long long)k);
  FUZZ_CHECK(heads_equal(a->h0, b->h0, 4, s->B, s->Hv, k * r, r, st), "key head %lld: h0", (long long)k);
  FUZZ_CHECK(!a->seg == !b->seg && (!a->seg || !memcmp(a->seg, b->seg, (size_t)BT * sizeof *a->seg)), "segments");
  FUZZ_CHECK(sl->n_outputs == fx->n_outputs, "outputs: %zu against %zu", sl->n_outputs, fx->n_outputs);
  for (size_t i = 0; i < fx->n_outputs; i++) {
    const gdn_outputs *x = &fx->outputs[i].out, *y = &sl->outputs[i].out;
    FUZZ_CHECK(heads_equal(x->o, y->o, 8, BT, s->Hv, k * r, r, s->Dv) &&
                   heads_equal(x->ht, y->ht, 8, s->B, s->Hv, k * r, r, st),
               "key head %lld: output %zu", (long long)k, i);
  }
  FUZZ_CHECK(sl->oracle.present == fx->oracle.present, "oracle present");
  if (fx->oracle.present)
    FUZZ_CHECK(heads_equal(fx->oracle.out.o, sl->oracle.out.o, 8, BT, s->Hv, k * r, r, s->Dv) &&
                   heads_equal(fx->oracle.out.ht, sl->oracle.out.ht, 8, s->B, s->Hv, k * r, r, st),
               "key head %lld: oracle", (long long)k);
}

/* What fix_load accepted, the head-group reader of a streamed check
 * (fix_group.h) opens with the same options and reads a key head at a
 * time, each slab its heads of the whole load bit for bit. */
static void check_groups(const fix_fixture *fx, const fix_load_opts *lo) {
  fix_group *g = NULL;
  gdn_error e;
  gdn_error_init(&e);
  int rc = fix_group_open(&g, work_path, lo, &e);
  FUZZ_CHECK(rc == GDN_OK, "fix_load accepted what fix_group_open refused: %s", e.msg);
  FUZZ_CHECK(!strcmp(fix_group_meta(g)->inputs_sha256, fx->inputs_sha256), "the group reader's inputs_sha256");
  for (int64_t k = 0; k < fx->inputs.shape.Hk; k++) {
    fix_fixture sl;
    fix_fixture_init(&sl);
    rc = fix_group_read(g, k, k + 1, &sl, &e);
    FUZZ_CHECK(rc == GDN_OK, "fix_load accepted what fix_group_read refused (key head %lld): %s", (long long)k, e.msg);
    check_slab(fx, &sl, k);
    fix_fixture_clear(&sl);
  }
  fix_group_close(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  if (!base_img) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    make_base();
  }
  FILE *w = fopen(work_path, "wb");
  if (!w || fwrite(base_img, 1, base_n, w) != base_n) abort();
  fclose(w);
  hid_t f = H5Fopen(work_path, H5F_ACC_RDWR, H5P_DEFAULT);
  FUZZ_CHECK(f >= 0, "cannot reopen the base fixture");
  rd r = {data, n};
  for (int ops = 0; r.n && ops < 12; ops++) {
    switch (u8(&r) % 6) {
    case 0: set_attr(f, &r); break;
    case 1: {
      hid_t o = H5Oopen(f, objects[u8(&r) % N(objects)], H5P_DEFAULT);
      const char *a = attrs[u8(&r) % N(attrs)];
      if (o >= 0) {
        if (H5Aexists(o, a) > 0) H5Adelete(o, a);
        H5Oclose(o);
      }
      break;
    }
    case 2: {
      const char *l = links[u8(&r) % N(links)];
      if (H5Lexists(f, l, H5P_DEFAULT) > 0) H5Ldelete(f, l, H5P_DEFAULT);
      break;
    }
    case 3: replace_dataset(f, &r); break;
    case 4: poke(f, &r); break;
    default: add_output(f, &r); break;
    }
  }
  H5Fclose(f);
  H5Eclear2(H5E_DEFAULT);
  for (int strict = 0; strict < 2; strict++) {
    fix_fixture fx;
    fix_fixture_init(&fx);
    fix_load_opts lo;
    fix_load_opts_init(&lo);
    lo.max_bytes = (uint64_t)64 << 20;
    lo.allow_stale_oracle = !strict;
    gdn_error e;
    gdn_error_init(&e);
    int rc = fix_load(&fx, work_path, &lo, &e);
    fuzz_check_error(rc, &e);
    if (!rc) {
      gdn_error e2;
      gdn_error_init(&e2);
      FUZZ_CHECK(fix_fixture_check(&fx, "loaded", &e2) == GDN_OK, "a loaded fixture fails the writer's check: %s",
                 e2.msg);
      FUZZ_CHECK(!strict || !fx.oracle.present || fx.oracle.fresh, "strict load accepted a stale oracle");
      char h[FIX_SHA256_HEX];
      FUZZ_CHECK(fix_inputs_sha256(&fx.inputs, h, &e2) == GDN_OK && !strcmp(h, fx.inputs_sha256), "hash");
      check_groups(&fx, &lo);
    } else {
      FUZZ_CHECK(rc != GDN_ERR_INTERNAL, "internal error on a well-formed HDF5 file: %s", e.msg);
      FUZZ_CHECK(strstr(e.msg, work_path) != NULL, "message does not name the file: %s", e.msg);
    }
    FUZZ_CHECK(rc == GDN_OK || fx.inputs.q == NULL, "failed load left data");
    fix_fixture_clear(&fx);
  }
  H5Eclear2(H5E_DEFAULT);
  return 0;
}
