/* KDA fixtures: synth -> check passes; a planted /outputs element fails,
 * named by output, head and token; a .npz with a rank-4 g imports bit for
 * bit; a rank-3 g in a kda file (and a rank-4 g in a gdn one, and a gdn
 * file under --recurrence kda) is refused by name; GDN files still go to
 * GDN's check.  Small shapes: the whole test takes well under a second. */
#include <check.h>
#include <hdf5.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zip.h>

#include "../fixtures/h5_edit.h"
#include "cli_inproc.h"
#include "fix_import.h"
#include "fix_kda.h"
#include "fix_load.h"
#include "fix_string.h"
#include "fix_write.h"
#include "gdn_alloc.h"
#include "gdn_chgate.h"
#include "gdn_synth.h"
#include "kern_kda.h"
#include "parity_kappa_ch.h"
#include "parity_recur_check.h"
#include "../scratch_case.h"

static const gdn_shape shape = {1, 96, 1, 2, 16, 16}; /* B T Hk Hv Dk Dv */

/* The fixture synth writes (gdn_synth's inputs, Kimi's gate, recurrence
 * kda), with our token kernel's outputs as /outputs/tpu_scan when
 * `with_output` (float32 o, ht: what a float32 TPU dump holds). */
static void make_kda(fix_fixture *fx, int with_output) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture_init(fx);
  gdn_synth_opts so = {3, GDN_SYNTH_H0, 0};
  ck_assert_int_eq(gdn_synth_generate(&fx->inputs, &shape, &so, &e), 0);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&fx->chgate, &shape, 3, &e), 0);
  ck_assert_int_eq(fix_set_string(&fx->recurrence, "kda", &e), 0);
  ck_assert_int_eq(fix_set_string(&fx->source, "tpu-dump", &e), 0);
  fx->chunk_size = 64;
  if (!with_output) return;
  fix_output *o;
  ck_assert_int_eq(fix_fixture_add_output(fx, "tpu_scan", &o, &e), 0);
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.matmul = KERN_MATMUL_IEEE;
  ck_assert_msg(kern_kda_recurrent(&fx->inputs, &fx->chgate, &cfg, KERN_KDA_MUTANT_NONE, &o->out, &e) == 0, "%s",
                e.msg);
  o->has_ht = 1;
  o->devices = 1;
  ck_assert_int_eq(fix_set_string(&o->implementation, "scan", &e), 0);
}

static void write_kda(const char *p, int with_output) {
  fix_fixture fx;
  gdn_error e;
  make_kda(&fx, with_output);
  ck_assert_msg(fix_write(&fx, p, &e) == 0, "%s", e.msg);
  fix_fixture_clear(&fx);
}

static int check_json(const char *p, const char *json, gdn_error *e) {
  char *av[] = {"gdn-parity", "check", (char *)p, "--json", (char *)json, "--reproducible", NULL};
  return cli_inproc(av, e);
}

static json_t *load_json(const char *p) {
  json_error_t je;
  json_t *d = json_load_file(p, 0, &je);
  ck_assert_msg(d != NULL, "%s: %s", p, je.text);
  return d;
}

/* The case of `subject` in a check document. */
static json_t *find_case(json_t *doc, const char *subject) {
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(doc, "cases"), i, c) {
    if (!strcmp(json_string_value(json_object_get(c, "subject")), subject)) return c;
  }
  ck_abort_msg("no case %s", subject);
  return NULL;
}

START_TEST(synth_check_passes) {
  const char *p = scratch_case_path("k.h5"), *j = scratch_case_path("k.json");
  write_kda(p, 1);
  gdn_error e;
  ck_assert_msg(check_json(p, j, &e) == 0, "%s", e.msg);
  json_t *d = load_json(j);
  ck_assert_str_eq(json_string_value(json_object_get(d, "recurrence")), "kda");
  ck_assert_str_eq(json_string_value(json_object_get(d, "gate_shape")), "head-token-channel");
  ck_assert_str_eq(json_string_value(json_object_get(d, "schema")), "gdn-parity-recurrence-check");
  ck_assert_int_ge(json_integer_value(json_object_get(json_object_get(d, "oracle"), "certified_bits")), 100);
  /* token, chunked at 64, affine-prefix at 1, 2, 4, 8, and the output */
  ck_assert_int_eq(json_integer_value(json_object_get(d, "n_cases")), 7);
  json_t *c = find_case(d, "output:tpu_scan");
  const double eo = json_real_value(json_object_get(json_object_get(c, "o"), "err")),
               eh = json_real_value(json_object_get(json_object_get(c, "ht"), "err"));
  /* our float32 token loop: measured 1e-7 .. 5e-7 normwise, far under 2^-12 */
  ck_assert_msg(eo > 0 && eo < 2e-6 && eh > 0 && eh < 2e-6, "o %g ht %g", eo, eh);
  ck_assert(json_is_true(json_object_get(d, "pass")));
  json_decref(d);
}
END_TEST

START_TEST(planted_output_fails_at_its_place) {
  const char *p = scratch_case_path("k.h5"), *j = scratch_case_path("k.json");
  write_kda(p, 1);
  /* o[b=0, t=37, h=1, d=5] off by 0.5 of the largest |o| (about 1) */
  const hsize_t flat = ((0 * 96 + 37) * 2 + 1) * 16 + 5;
  hid_t f = h5e_open_rw(p), d = H5Dopen2(f, "/outputs/tpu_scan/o", H5P_DEFAULT);
  float o[96 * 2 * 16];
  ck_assert_int_ge(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, o), 0);
  o[flat] += 0.5f;
  ck_assert_int_ge(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, o), 0);
  H5Dclose(d);
  H5Fclose(f);
  gdn_error e;
  ck_assert_int_eq(check_json(p, j, &e), 1);
  json_t *doc = load_json(j);
  json_t *c = find_case(doc, "output:tpu_scan"), *w = json_object_get(json_object_get(c, "o"), "worst");
  ck_assert(json_is_false(json_object_get(c, "pass")));
  ck_assert_int_eq(json_integer_value(json_object_get(w, "t")), 37);
  ck_assert_int_eq(json_integer_value(json_object_get(w, "h")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(w, "d")), 5);
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "n_failed")), 1); /* the kernels still pass */
  ck_assert(json_is_true(json_object_get(find_case(doc, "kda-chunk"), "pass")));
  json_decref(doc);
}
END_TEST

/* The band check judges a KDA case by: u (8 kappa_G + 64) with kappa_G per
 * channel of the fixture's gates at (C, D) (the token kernel: 64 u). */
static double kappa_band(const fix_fixture *fx, int64_t C, int64_t D, double *kappa) {
  *kappa = 0;
  if (C <= 0) return 0x1p-24 * 64;
  parity_kappa_ch kc;
  gdn_error e;
  ck_assert_msg(parity_kappa_channels(&fx->inputs, &fx->chgate, C, D > 0 ? D : 1, &kc, &e) == 0, "%s", e.msg);
  *kappa = kc.worst;
  return 0x1p-24 * (8 * kc.worst + 64);
}

/* write_kda's fixture plus /outputs/bf (the token kernel's o stored as
 * bfloat16, devices 2). */
static void write_kda_bf16(const char *p) {
  fix_fixture fx;
  gdn_error e;
  make_kda(&fx, 1);
  fix_output *o;
  ck_assert_int_eq(fix_fixture_add_output(&fx, "bf", &o, &e), 0);
  kern_config cfg;
  kern_config_init(&cfg);
  cfg.matmul = KERN_MATMUL_IEEE;
  ck_assert_msg(kern_kda_recurrent(&fx.inputs, &fx.chgate, &cfg, KERN_KDA_MUTANT_NONE, &o->out, &e) == 0, "%s",
                e.msg);
  o->out.dtype = GDN_DTYPE_BF16;
  o->has_ht = 1;
  o->devices = 2;
  o->missing &= ~(unsigned)(FIX_ATTR_DEVICES | FIX_ATTR_IMPLEMENTATION);
  ck_assert_int_eq(fix_set_string(&o->implementation, "scan", &e), 0);
  ck_assert_msg(fix_write(&fx, p, &e) == 0, "%s", e.msg);
  fix_fixture_clear(&fx);
}

/* Every case's band and kappa_g are the formula's at its chunk and devices
 * (a stored output: the file's chunk_size and its devices attribute; a
 * bfloat16 o: u_bf16 + (1 + u_bf16) band, its ht the float32 band). */
START_TEST(check_band_follows_kappa) {
  const char *p = scratch_case_path("k.h5"), *j = scratch_case_path("k.json");
  write_kda_bf16(p);
  gdn_error e;
  ck_assert_msg(check_json(p, j, &e) == 0, "%s", e.msg);
  json_t *d = load_json(j);
  fix_fixture fx;
  make_kda(&fx, 0);
  size_t i;
  json_t *c;
  int n_kernel = 0;
  json_array_foreach(json_object_get(d, "cases"), i, c) {
    const char *sub = json_string_value(json_object_get(c, "subject"));
    const int out = !strncmp(sub, "output:", 7);
    int64_t C = json_integer_value(json_object_get(c, "chunk")), D = json_integer_value(json_object_get(c, "devices"));
    if (out) C = 64;
    double kappa;
    const double band = kappa_band(&fx, C, D, &kappa);
    json_t *kj = json_object_get(c, "kappa_g");
    ck_assert_ptr_nonnull(kj);
    if (C <= 0) {
      ck_assert(json_is_null(kj));
    } else {
      ck_assert_msg(json_real_value(json_object_get(kj, "value")) == kappa, "%s: kappa %g", sub, kappa);
      ck_assert(kappa > 1);
    }
    const double got = json_real_value(json_object_get(c, "band"));
    if (!strcmp(sub, "output:bf")) {
      ck_assert_int_eq(D, 2);
      ck_assert_msg(got == 0x1p-8 + (1 + 0x1p-8) * band, "bf band %g (f32 %g)", got, band);
      ck_assert(json_real_value(json_object_get(c, "band_ht")) == band);
      /* o rounded to bfloat16: about 2^-9 of max |o|, under its band */
      const double eo = json_real_value(json_object_get(json_object_get(c, "o"), "err"));
      ck_assert_msg(eo > 0x1p-12 && eo <= got, "bf o err %g", eo);
    } else {
      ck_assert_msg(got == band, "%s: band %g, formula %g", sub, got, band);
      ck_assert_ptr_null(json_object_get(c, "band_ht"));
      n_kernel += !out;
    }
    ck_assert(json_is_true(json_object_get(c, "pass")));
  }
  ck_assert_int_eq(n_kernel, 6);
  ck_assert_int_eq(json_integer_value(json_object_get(d, "n_cases")), 8);
  fix_fixture_clear(&fx);
  json_decref(d);
}
END_TEST

/* o[0, 37, 1, 5] of /outputs/tpu_scan moved by f band max |o| (band: the
 * output case's, C 64, one device): check's verdict on the output. */
static int planted_at_band(double f) {
  const char *p = scratch_case_path("k.h5"), *j = scratch_case_path("k.json");
  write_kda(p, 1);
  fix_fixture fx;
  make_kda(&fx, 0);
  double kappa;
  const double band = kappa_band(&fx, 64, 1, &kappa);
  fix_fixture_clear(&fx);
  const hsize_t flat = ((0 * 96 + 37) * 2 + 1) * 16 + 5;
  hid_t f5 = h5e_open_rw(p), d = H5Dopen2(f5, "/outputs/tpu_scan/o", H5P_DEFAULT);
  float o[96 * 2 * 16];
  ck_assert_int_ge(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, o), 0);
  float mx = 0;
  for (int k = 0; k < 96 * 2 * 16; k++) mx = fabsf(o[k]) > mx ? fabsf(o[k]) : mx;
  o[flat] += (float)(f * band * mx);
  ck_assert_int_ge(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, o), 0);
  H5Dclose(d);
  H5Fclose(f5);
  gdn_error e;
  const int rc = check_json(p, j, &e);
  ck_assert_int_le(rc, 1);
  json_t *doc = load_json(j);
  json_t *c = find_case(doc, "output:tpu_scan");
  ck_assert(json_real_value(json_object_get(c, "band")) == band);
  const int pass = json_is_true(json_object_get(c, "pass"));
  ck_assert_int_eq(pass, rc == 0);
  json_decref(doc);
  return pass;
}

START_TEST(planted_tenth_band_passes) { ck_assert(planted_at_band(0.1)); }
END_TEST

START_TEST(planted_ten_bands_fails) { ck_assert(!planted_at_band(10)); }
END_TEST

/* One float32 array as .npy bytes (version 1.0 header padded to 64). */
static void *npy_bytes(const float *x, const int64_t *dims, int rank, size_t *n) {
  char shape[96] = "", hdr[256];
  for (int i = 0; i < rank; i++) snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%lld, ", (long long)dims[i]);
  size_t count = 1;
  for (int i = 0; i < rank; i++) count *= (size_t)dims[i];
  int h = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shape);
  while ((10 + h + 1) % 64) hdr[h++] = ' ';
  hdr[h++] = '\n';
  *n = 10 + (size_t)h + count * 4;
  unsigned char *b = malloc(*n);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (unsigned char)(h & 255);
  b[9] = (unsigned char)(h >> 8);
  memcpy(b + 10, hdr, (size_t)h);
  memcpy(b + 10 + h, x, count * 4);
  return b;
}

/* The fixture's inputs as DIR/in.npz (members q, k, v, g, beta, h0). */
static void write_npz(const fix_fixture *fx, const char *zpath, int g_rank) {
  const gdn_shape *s = &fx->inputs.shape;
  const int64_t qk[4] = {s->B, s->T, s->Hk, s->Dk}, v[4] = {s->B, s->T, s->Hv, s->Dv},
                g[4] = {s->B, s->T, s->Hv, s->Dk}, st[4] = {s->B, s->Hv, s->Dk, s->Dv};
  const float *src[6] = {fx->inputs.q, fx->inputs.k, fx->inputs.v, g_rank == 4 ? fx->chgate.g : fx->inputs.g,
                         fx->inputs.beta, fx->inputs.h0};
  const int64_t *dims[6] = {qk, qk, v, g, g, st};
  const int ranks[6] = {4, 4, 4, g_rank, 3, 4};
  static const char *const names[6] = {"q.npy", "k.npy", "v.npy", "g.npy", "beta.npy", "h0.npy"};
  int err;
  zip_t *z = zip_open(zpath, ZIP_CREATE | ZIP_TRUNCATE, &err);
  ck_assert_ptr_nonnull(z);
  for (int i = 0; i < 6; i++) {
    size_t n;
    void *b = npy_bytes(src[i], dims[i], ranks[i], &n);
    zip_source_t *zs = zip_source_buffer(z, b, n, 1);
    ck_assert_ptr_nonnull(zs);
    ck_assert_int_ge(zip_file_add(z, names[i], zs, ZIP_FL_OVERWRITE), 0);
  }
  ck_assert_int_eq(zip_close(z), 0);
}

static int import_npz(const char *recurrence, fix_fixture *out, gdn_error *e) {
  FILE *f = fopen(scratch_case_path("fixture.json"), "w");
  fprintf(f, "{\"source\": \"tpu-dump\", \"chunk_size\": 64, \"l2norm_in_kernel\": 1, \"inputs\": \"in.npz\"}\n");
  fclose(f);
  fix_import_opts io;
  fix_import_opts_init(&io);
  io.dir = scratch_case_dir;
  io.recurrence = recurrence;
  fix_fixture_init(out);
  return fix_import(out, &io, e);
}

START_TEST(npz_rank4_g_round_trips) {
  fix_fixture fx, im, back;
  gdn_error e;
  make_kda(&fx, 0);
  write_npz(&fx, scratch_case_path("in.npz"), 4);
  ck_assert_msg(import_npz(NULL, &im, &e) == 0, "%s", e.msg); /* named by g's rank */
  ck_assert_str_eq(im.recurrence, "kda");
  ck_assert_msg(fix_write(&im, scratch_case_path("im.h5"), &e) == 0, "%s", e.msg);
  fix_fixture_init(&back);
  ck_assert_msg(fix_kda_load(&back, scratch_case_path("im.h5"), 0, &e) == 0, "%s", e.msg);
  const size_t n = gdn_chgate_numel(&shape);
  ck_assert_int_eq(memcmp(back.chgate.g, fx.chgate.g, n * sizeof(float)), 0);
  ck_assert_int_eq(memcmp(back.inputs.v, fx.inputs.v, gdn_shape_numel_v(&shape) * sizeof(float)), 0);
  ck_assert_int_eq(memcmp(back.inputs.h0, fx.inputs.h0, gdn_shape_numel_state(&shape) * sizeof(float)), 0);
  char h[65];
  ck_assert_int_eq(fix_kda_inputs_sha256(&fx, h, &e), 0);
  ck_assert_str_eq(back.inputs_sha256, h);
  ck_assert_str_eq(im.inputs_sha256, h);
  fix_fixture_clear(&back);
  fix_fixture_clear(&im);
  /* an explicit gdn with the rank-4 g: refused naming g and its shape */
  ck_assert_int_eq(import_npz("gdn", &im, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "in.npz:g") && strstr(e.msg, "(1, 96, 2, 16)") && strstr(e.msg, "recurrence is gdn"),
                "%s", e.msg);
  /* an explicit kda with a rank-3 g */
  write_npz(&fx, scratch_case_path("in.npz"), 3);
  ck_assert_int_eq(import_npz("kda", &im, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "in.npz:g") && strstr(e.msg, "(1, 96, 2)") && strstr(e.msg, "recurrence is kda"), "%s",
                e.msg);
  ck_assert_msg(import_npz(NULL, &im, &e) == 0, "%s", e.msg); /* rank 3: gdn */
  ck_assert_ptr_null(im.recurrence);
  fix_fixture_clear(&im);
  fix_fixture_clear(&fx);
}
END_TEST

START_TEST(gate_rank_and_recurrence_must_agree) {
  gdn_error e;
  /* a kda file whose g is rank 3 */
  const char *g3 = scratch_case_path("g3.h5"), *j = scratch_case_path("x.json");
  fix_fixture fx;
  make_kda(&fx, 0);
  gdn_chgate_clear(&fx.chgate);
  gdn_free(fx.recurrence);
  fx.recurrence = NULL;
  ck_assert_int_eq(fix_write(&fx, g3, &e), 0);
  fix_fixture_clear(&fx);
  h5e_set_attr_str(g3, "/", "recurrence", "kda");
  ck_assert_int_eq(check_json(g3, j, &e), -1);
  ck_assert_msg(strstr(e.msg, "/inputs/g") && strstr(e.msg, "(1, 96, 2)") && strstr(e.msg, "\"kda\""), "%s", e.msg);
  /* a file without the attribute whose g is rank 4 */
  const char *g4 = scratch_case_path("g4.h5");
  write_kda(g4, 0);
  hid_t f = h5e_open_rw(g4);
  ck_assert_int_ge(H5Adelete(f, "recurrence"), 0);
  H5Fclose(f);
  ck_assert_int_eq(check_json(g4, j, &e), -1);
  ck_assert_msg(strstr(e.msg, "/inputs/g has rank 4") && strstr(e.msg, "recurrence = \"kda\""), "%s", e.msg);
  /* a KDA file under --recurrence gdn */
  char *avg[] = {"gdn-parity", "check", (char *)g4, "--recurrence", "gdn", NULL};
  write_kda(g4, 0);
  ck_assert_int_eq(cli_inproc(avg, &e), -1);
  ck_assert_msg(strstr(e.msg, "--recurrence gdn") && strstr(e.msg, "is a kda fixture"), "%s", e.msg);
  /* a GDN file under --recurrence kda */
  const char *gdn = scratch_case_path("gdn.h5");
  make_kda(&fx, 0);
  gdn_chgate_clear(&fx.chgate);
  gdn_free(fx.recurrence);
  fx.recurrence = NULL;
  ck_assert_int_eq(fix_write(&fx, gdn, &e), 0);
  fix_fixture_clear(&fx);
  char *av[] = {"gdn-parity", "check", (char *)gdn, "--recurrence", "kda", NULL};
  ck_assert_int_eq(cli_inproc(av, &e), -1);
  ck_assert_msg(strstr(e.msg, "is a gdn fixture"), "%s", e.msg);
  /* GDN's check still reads it (the dispatch leaves it alone) */
  char *av2[] = {"gdn-parity", "check", (char *)gdn, "--quiet", NULL};
  ck_assert_msg(cli_inproc(av2, &e) >= 0, "%s", e.msg);
  /* the GDN loader refuses a KDA file by name */
  write_kda(g4, 0);
  fix_fixture back;
  fix_fixture_init(&back);
  fix_load_opts lo;
  fix_load_opts_init(&lo);
  ck_assert_int_eq(fix_load(&back, g4, &lo, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "recurrence \"kda\"") && strstr(e.msg, "gdn-parity check"), "%s", e.msg);
}
END_TEST

/* bfloat16 inputs (q, k, v, beta): the kernels store o in bfloat16 and are
 * held to the bfloat16 band (parity_recur_band_bf16), as an output stored in
 * bfloat16 is, their ht to the float32 band (they were
 * held to the float32 band: 2.6e-3 against 2^-12, a FAIL of our own kernels
 * on every bfloat16 KDA fixture). */
START_TEST(bf16_inputs_kernels_take_the_bf16_band) {
  fix_fixture fx;
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture_init(&fx);
  gdn_synth_opts so = {3, GDN_SYNTH_H0, GDN_T_Q | GDN_T_K | GDN_T_V | GDN_T_BETA};
  ck_assert_int_eq(gdn_synth_generate(&fx.inputs, &shape, &so, &e), 0);
  ck_assert_int_eq(gdn_chgate_draw_kimi(&fx.chgate, &shape, 3, &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.recurrence, "kda", &e), 0);
  ck_assert_int_eq(fix_set_string(&fx.source, "synthetic", &e), 0);
  fx.chunk_size = 32;
  const char *p = scratch_case_path("bf16.h5"), *j = scratch_case_path("bf16.json");
  ck_assert_msg(fix_write(&fx, p, &e) == 0, "%s", e.msg);
  fix_fixture_clear(&fx);
  ck_assert_msg(check_json(p, j, &e) == 0, "%s", e.msg);
  json_t *d = load_json(j);
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(d, "cases"), i, c) {
    /* o's band: the float32 band (ht's, "band_ht") widened by bfloat16's rounding */
    const double band = json_real_value(json_object_get(c, "band"));
    const double band_ht = json_real_value(json_object_get(c, "band_ht"));
    ck_assert_msg(band_ht > 0 && band_ht < 0x1p-12, "band_ht %g", band_ht);
    ck_assert_double_eq(band, parity_recur_band_bf16(band_ht));
    const double err = json_real_value(json_object_get(json_object_get(c, "o"), "err"));
    ck_assert_msg(err > 0x1p-12 && err < band, "%s: o err %g", json_string_value(json_object_get(c, "subject")),
                  err); /* bfloat16 rounding of o: above the float32 band, inside its own */
  }
  json_decref(d);
}
END_TEST

/* A grid file in the test's folder. */
static const char *write_grid(const char *name, const char *entries) {
  const char *p = scratch_case_path(name);
  FILE *f = fopen(p, "w");
  fprintf(f, "{\"name\": \"%s\", \"recurrence\": \"kda\", \"entries\": [%s]}\n", name, entries);
  fclose(f);
  return p;
}

/* coverage --recurrence kda: a small grid with grouped heads, T > C and
 * h0 kills all five mutants; a grid of one chunk, one head and no h0 lets
 * gate-other-head, cumsum-across-chunks and subchunk-off-by-one survive
 * (the negative control); sweep runs the grid unplanted. */
START_TEST(kda_grid_coverage_and_sweep) {
  const char *strong = write_grid("strong.json", "{\"shape\": \"1,128,4,16\", \"key_heads\": 2, \"h0\": true, "
                                                 "\"seed\": 1, \"chunk\": [64], \"devices\": [1, 4]}"),
             *weak = write_grid("weak.json", "{\"shape\": \"1,16,1,16\", \"chunk\": [16], \"devices\": [1]}"),
             *j = scratch_case_path("cov.json");
  gdn_error e;
  char *cov[] = {"gdn-parity", "coverage", "--recurrence", "kda", "--grid", (char *)strong, "--json", (char *)j, NULL};
  ck_assert_msg(cli_inproc(cov, &e) == 0, "%s", e.msg);
  json_t *d = load_json(j);
  ck_assert_str_eq(json_string_value(json_object_get(d, "schema")), "gdn-parity-recurrence-coverage");
  ck_assert_int_eq(json_integer_value(json_object_get(d, "n_killed")), 5);
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(d, "mutants"), i, m) {
    /* measured 0.37 .. 0.99: three orders of magnitude over the 2^-12 band */
    ck_assert_msg(json_real_value(json_object_get(m, "max_err")) > 0.1, "%s",
                  json_string_value(json_object_get(m, "name")));
  }
  json_decref(d);
  cov[5] = (char *)weak;
  ck_assert_int_eq(cli_inproc(cov, &e), 1);
  d = load_json(j);
  ck_assert_int_eq(json_integer_value(json_object_get(d, "n_killed")), 2);
  json_array_foreach(json_object_get(d, "mutants"), i, m) {
    const char *n = json_string_value(json_object_get(m, "name"));
    const int survives = !strcmp(n, "gate-other-head") || !strcmp(n, "cumsum-across-chunks") ||
                         !strcmp(n, "subchunk-off-by-one");
    ck_assert_msg(json_is_true(json_object_get(m, "killed")) == !survives, "%s", n);
  }
  json_decref(d);
  char *sw[] = {"gdn-parity", "sweep", "--recurrence", "kda", "--grid", (char *)strong, "--json", (char *)j, NULL};
  ck_assert_msg(cli_inproc(sw, &e) == 0, "%s", e.msg);
  d = load_json(j);
  ck_assert_str_eq(json_string_value(json_object_get(d, "recurrence")), "kda");
  ck_assert_int_eq(json_integer_value(json_object_get(d, "n_failed")), 0);
  json_decref(d);
  /* refusals: a GDN grid, an unknown key, an option not taken */
  const char *bad = write_grid("bad.json", "{\"shape\": \"1,16,1,16\", \"gates\": \"slow\"}");
  sw[5] = (char *)bad;
  ck_assert_int_eq(cli_inproc(sw, &e), -1);
  ck_assert_msg(strstr(e.msg, "unknown key \"gates\""), "%s", e.msg);
  char *rep[] = {"gdn-parity", "sweep", "--recurrence", "kda", "--grid", (char *)strong, "--policy", "p.json", NULL};
  ck_assert_int_eq(cli_inproc(rep, &e), -1);
  ck_assert_msg(strstr(e.msg, "does not support --policy"), "%s", e.msg);
}
END_TEST

int main(void) {
  Suite *s = suite_create("kda_fixture");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, scratch_case_setup, scratch_case_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, synth_check_passes);
  tcase_add_test(tc, planted_output_fails_at_its_place);
  tcase_add_test(tc, check_band_follows_kappa);
  tcase_add_test(tc, planted_tenth_band_passes);
  tcase_add_test(tc, planted_ten_bands_fails);
  tcase_add_test(tc, npz_rank4_g_round_trips);
  tcase_add_test(tc, gate_rank_and_recurrence_must_agree);
  tcase_add_test(tc, kda_grid_coverage_and_sweep);
  tcase_add_test(tc, bf16_inputs_kernels_take_the_bf16_band);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? 1 : 0;
}
