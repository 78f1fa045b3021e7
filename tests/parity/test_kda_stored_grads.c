/* A Kimi Delta Attention fixture's gradient oracle stored beside its
 * forward (regen --grads, /oracle/grads with dg per channel;
 * fix_regen_grads.h, fix_kda.h, parity_recur_check_grad.h), end to end
 * through gdn-fixture and gdn-parity, as test_stored_grads.c does for
 * Gated DeltaNet:
 *   - regen --grads stores exactly the KDA VJP oracle's gradients for the
 *     file's cotangents (oracle_kda_vjp certified here, bit for bit), dg
 *     (B, T, Hv, Dk), with its certificate (the per-tensor bits too,
 *     attribute certificate) and grad_problem_sha256; by
 *     groups of 1 and 3 key heads the same values and attributes; the dd
 *     tier within 2^-80 of MPFR's with its own certificate, by group the
 *     same; gdn-parity regen --grads is gdn-fixture's file; a regen without
 *     --grads drops them, whole and by group.  Negative control: one
 *     planted element is found by the same comparison;
 *   - check takes the stored gradients instead of computing the VJP: the
 *     document is the forward-only file's but for where the gradients came
 *     from (grad.oracle's from_fixture and spot_check), whole and streamed
 *     by head group (the same document); a file without the attribute
 *     certificate: taken, check_bits and certified null;
 *   - a stored gradient wrong at key head 0 fails the spot check: the VJP is
 *     computed, the document says why (grad.oracle.note) and is otherwise
 *     the forward-only file's; one wrong at key head 1 is not seen (the
 *     spot check samples one key head) and the check FAILs against it;
 *   - the stored forward refused (its spot check): its gradients are not
 *     used either, whole and streamed the same document, which says so;
 *     certified to fewer than 53 bits: not used, said; a dd regen's taken
 *     with its tier, the cases judged as against the computed VJP;
 *   - other cotangents make it stale: verify exits 1 naming it, check
 *     recomputes and says so;
 *   - refusals: --grads without /cotangents (exit 2, the file unchanged,
 *     whole and by group), or over --max-bytes with the gradients it
 *     computes (the forward alone fits), but not for the stored
 *     /oracle/grads a regen never reads; a /oracle/grads without its tier attribute, or
 *     with GDN's rank-3 dg, or a certificate whose least bits are not
 *     certified_bits, is refused by the loader; verify and info show a
 *     fresh one. */
#include <check.h>
#include <hdf5.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_runner.h"

#include "../fixtures/h5_edit.h"
#include "cli_files.h"
#include "fix_kda.h"
#include "gdn_alloc.h"
#include "gdn_chgrads.h"
#include "oracle_kda_vjp.h"
#include "parity_recur_check.h"
#include "parity_recurrence.h"

static char *exe, *fixture_exe;
/* The test's files, in a fresh scratch folder (cli_run.h) removed with
 * whatever is left in it. */
static void dir_begin(void) { cli_scratch_make(); }
static void dir_end(void) { cli_scratch_remove(); }
static const char *at(const char *name) { return cli_path(name); }

/* f.h5: a KDA fixture, h0, 4 key heads of 2 value heads (B 1, T 64, Dk =
 * Dv = 8), cotangents, two kernel outputs with their gradients; `grad` 0:
 * no cotangents (and no gradients). */
static void synth(const char *path, int grad) {
  cli_result r;
  const char *args[20] = {"--shape", "1,64,8,8", "--key-heads", "4", "--recurrence", "kda", "--h0",
                          "--kernel-outputs", "1,2", "--out", path, NULL};
  if (grad) args[11] = "--grad";
  cli_run_sub(&r, fixture_exe, "synth", NULL, args);
  ck_assert_msg(r.status == 0, "synth: %s", r.err);
}

static void regen(const char *path, const char *const *args) { cli_regen(fixture_exe, path, args); }

/* fx: not holding anything (load initialises it; clear it after use). */
static void load(const char *path, fix_fixture *fx) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture_init(fx);
  ck_assert_msg(fix_kda_load(fx, path, 0, &e) == GDN_OK, "%s", e.msg);
}

/* Elements of a and b (dg per channel) that differ (bits), over the six tensors. */
static long differ(const gdn_grads *a, const gdn_grads *b) {
  long n = 0;
  for (int id = 0; id < GDN_GRADS_N; id++) {
    const double *x = gdn_grads_tensor_c(a, (gdn_grad_id)id), *y = gdn_grads_tensor_c(b, (gdn_grad_id)id);
    for (size_t i = 0; i < gdn_chgrads_numel(&a->shape, (gdn_grad_id)id); i++) n += memcmp(&x[i], &y[i], 8) != 0;
  }
  return n;
}

static void same_attrs(const fix_oracle *a, const fix_oracle *b) {
  ck_assert(a->grads_has_cert && b->grads_has_cert && a->grads_check_bits == b->grads_check_bits);
  ck_assert(!memcmp(a->grads_tensor_bits, b->grads_tensor_bits, sizeof a->grads_tensor_bits));
  ck_assert_int_eq(a->grads_tier_dd, b->grads_tier_dd);
  ck_assert_int_eq(a->grads_precision_bits, b->grads_precision_bits);
  ck_assert_int_eq(a->grads_certified_bits, b->grads_certified_bits);
  ck_assert_int_eq(a->grads_normwise_bits, b->grads_normwise_bits);
  ck_assert_str_eq(a->grad_problem_sha256, b->grad_problem_sha256);
}

/* The stored dg's dims: (B, T, Hv, Dk), the gate's. */
static void dg_per_channel(const char *path) {
  hid_t f = h5e_open_rw(path), d = H5Dopen2(f, "/oracle/grads/dg", H5P_DEFAULT);
  ck_assert_int_ge(d, 0);
  hid_t sp = H5Dget_space(d);
  hsize_t dims[8];
  ck_assert_int_eq(H5Sget_simple_extent_dims(sp, dims, NULL), 4);
  ck_assert(dims[0] == 1 && dims[1] == 64 && dims[2] == 8 && dims[3] == 8);
  H5Sclose(sp);
  H5Dclose(d);
  H5Fclose(f);
}

/* dd within 2^-80 of MPFR's, each tensor against its largest value. */
static void dd_near(const gdn_grads *dd, const gdn_grads *v) {
  for (int id = 0; id < GDN_GRADS_N; id++) {
    const double *a = gdn_grads_tensor_c(dd, (gdn_grad_id)id), *b = gdn_grads_tensor_c(v, (gdn_grad_id)id);
    double big = 0, d = 0;
    for (size_t i = 0; i < gdn_chgrads_numel(&v->shape, (gdn_grad_id)id); i++) {
      big = fabs(b[i]) > big ? fabs(b[i]) : big;
      d = fabs(a[i] - b[i]) > d ? fabs(a[i] - b[i]) : d;
    }
    ck_assert_msg(d <= 0x1p-80 * big, "%s: dd differs by %g of %g", gdn_grads_name((gdn_grad_id)id), d, big);
  }
}

/* A regen without --grads drops /oracle/grads, whole and by group (no stale gradients outlive their forward). */
static void regen_drops(const char *from) {
  for (int i = 0; i < 2; i++) {
    fix_fixture x;
    cli_copy_file(from, at("drop.h5"));
    regen(at("drop.h5"), i ? (const char *const[]){"--force", "--group-heads", "1", "--quiet", NULL}
                           : (const char *const[]){"--force", "--quiet", NULL});
    load(at("drop.h5"), &x);
    ck_assert_msg(!x.oracle.has_grads && !x.oracle.grads.dq, "regen without --grads left /oracle/grads (%d)", i);
    fix_fixture_clear(&x);
  }
}

START_TEST(regen_stores_the_vjp) {
  dir_begin();
  const char *f = at("f.h5");
  synth(f, 1);
  const char *names[4] = {"g1.h5", "g3.h5", "dd.h5", "ddg.h5"};
  for (int i = 0; i < 4; i++) cli_copy_file(f, at(names[i]));
  regen(f, (const char *const[]){"--grads", "--quiet", NULL});
  regen(at("g1.h5"), (const char *const[]){"--grads", "--group-heads", "1", "--quiet", NULL});
  regen(at("g3.h5"), (const char *const[]){"--grads", "--group-heads", "3", "--quiet", NULL});
  regen(at("dd.h5"), (const char *const[]){"--grads", "--oracle", "dd", "--quiet", NULL});
  regen(at("ddg.h5"), (const char *const[]){"--grads", "--oracle", "dd", "--group-heads", "1", "--quiet", NULL});
  dg_per_channel(f);
  fix_fixture w, x;
  load(f, &w);
  ck_assert(w.oracle.has_grads && w.oracle.grads_fresh && !w.oracle.grads_tier_dd && w.oracle.grads_per_channel);
  ck_assert_str_eq(w.oracle.grad_problem_sha256, w.grad_problem_sha256);
  /* exactly the certified MPFR KDA VJP of the file's inputs, gate and cotangents */
  gdn_grads v;
  gdn_grads_init(&v);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  oracle_vjp_certificate cert;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(oracle_kda_vjp(&w.inputs, &w.chgate, &w.cot, &cfg, &v, &cert, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(differ(&w.oracle.grads, &v), 0);
  ck_assert_int_eq(w.oracle.grads_certified_bits, cert.certified_bits);
  ck_assert_int_eq(w.oracle.grads_precision_bits, 128);
  ck_assert(w.oracle.grads_has_cert && w.oracle.grads_check_bits == cert.check_bits);
  for (int id = 0; id < GDN_GRADS_N; id++) ck_assert_int_eq(w.oracle.grads_tensor_bits[id], cert.certified[id]);
  for (int i = 0; i < 2; i++) { /* by groups of 1 and 3: the same values and certificate */
    load(at(i ? "g3.h5" : "g1.h5"), &x);
    ck_assert_int_eq(differ(&x.oracle.grads, &w.oracle.grads), 0);
    same_attrs(&x.oracle, &w.oracle);
    fix_fixture_clear(&x);
  }
  fix_fixture dd;
  load(at("dd.h5"), &dd);
  load(at("ddg.h5"), &x);
  ck_assert(dd.oracle.grads_tier_dd && dd.oracle.grads_precision_bits == 106 && dd.oracle.grads_certified_bits >= 80);
  ck_assert_int_ge(dd.oracle.grads_normwise_bits, 80);
  ck_assert_int_eq(differ(&x.oracle.grads, &dd.oracle.grads), 0);
  same_attrs(&x.oracle, &dd.oracle);
  fix_fixture_clear(&x);
  dd_near(&dd.oracle.grads, &v);
  /* negative control: one element planted in a copy (dg, a channel past the first) is found */
  cli_copy_file(at("g1.h5"), at("p.h5"));
  h5e_poke(at("p.h5"), "/oracle/grads/dg", 8 * 8 + 5, 0.25f);
  load(at("p.h5"), &x);
  ck_assert_int_eq(differ(&x.oracle.grads, &w.oracle.grads), 1);
  fix_fixture_clear(&x);
  regen_drops(at("g1.h5"));
  /* gdn-parity regen --grads: gdn-fixture's file */
  cli_copy_file(at("g1.h5"), at("pr.h5"));
  cli_result r;
  cli_run_sub(&r, exe, "regen", at("pr.h5"), (const char *const[]){"--grads", "--group-heads", "1", "--force", NULL});
  ck_assert_msg(r.status == 0 && strstr(r.out, "/oracle/grads: tier mpfr"), "%d %s %s", r.status, r.out, r.err);
  ck_assert(cli_same_bytes(at("pr.h5"), at("g1.h5")));
  gdn_grads_clear(&v);
  fix_fixture_clear(&dd);
  fix_fixture_clear(&w);
  dir_end();
}
END_TEST

/* check --json of path (group: --group-heads, or NULL) into doc.json,
 * exit status want; the document with its file-naming field removed. */
static json_t *check_doc(const char *path, const char *group, int want, char *log, size_t n) {
  const char *jp = at("doc.json");
  cli_check_json(exe, path, group, want, jp, log, n);
  json_error_t je;
  json_t *d = json_load_file(jp, 0, &je);
  ck_assert_ptr_nonnull(d);
  json_object_del(d, "fixture");
  unlink(jp);
  return d;
}

/* Field k of document d's grad.oracle (NULL: absent). */
static json_t *grad_oracle(json_t *d, const char *k) {
  return json_object_get(json_object_get(json_object_get(d, "grad"), "oracle"), k);
}

/* d without where its gradients came from equals ref: grad.oracle's
 * from_fixture, spot_check and note dropped. */
static void equal_but_stored(json_t *d, json_t *ref) {
  json_t *c = json_deep_copy(d), *o = json_object_get(json_object_get(c, "grad"), "oracle");
  json_object_del(o, "from_fixture");
  json_object_del(o, "spot_check");
  json_object_del(o, "note");
  ck_assert_msg(json_equal(c, ref), "the documents differ beyond the stored gradients' fields");
  json_decref(c);
}

START_TEST(check_takes_the_stored_vjp) {
  dir_begin();
  const char *f = at("f.h5"), *fw = at("fw.h5");
  synth(f, 1);
  cli_copy_file(f, fw);
  regen(f, (const char *const[]){"--grads", "--quiet", NULL});
  regen(fw, (const char *const[]){"--quiet", NULL});
  static char log[1 << 17];
  json_t *ref = check_doc(fw, NULL, 0, NULL, 0), *whole = check_doc(f, NULL, 0, log, sizeof log),
         *streamed = check_doc(f, "1", 0, NULL, 0);
  ck_assert_msg(strstr(log, "gradients: the fixture's stored mpfr VJP"), "%s", log);
  ck_assert(json_is_true(grad_oracle(whole, "from_fixture")));
  ck_assert(json_real_value(json_object_get(grad_oracle(whole, "spot_check"), "rel")) == 0.0);
  ck_assert_int_eq(json_integer_value(grad_oracle(whole, "check_bits")), 192); /* the stored certificate's */
  ck_assert(json_equal(grad_oracle(whole, "certified"), grad_oracle(ref, "certified")));
  ck_assert_ptr_null(grad_oracle(ref, "from_fixture"));
  ck_assert_ptr_null(grad_oracle(ref, "note"));
  ck_assert(json_equal(whole, streamed));
  equal_but_stored(whole, ref);
  json_decref(whole);
  json_decref(streamed);
  /* wrong at key head 0: the spot check sees it, the VJP is computed */
  const char *p0 = at("p0.h5"), *p1 = at("p1.h5");
  cli_copy_file(f, p0);
  cli_copy_file(f, p1);
  h5e_poke(p0, "/oracle/grads/dk", (5 * 4 + 0) * 8 + 3, 0.5f); /* (b 0, t 5, key head 0, d 3) */
  h5e_poke(p1, "/oracle/grads/dk", (5 * 4 + 1) * 8 + 3, 0.5f); /* key head 1 */
  for (int s = 0; s < 2; s++) {
    json_t *d = check_doc(p0, s ? "1" : NULL, 0, log, sizeof log);
    ck_assert_msg(strstr(log, "/oracle/grads is not trusted (spot check"), "%s", log);
    ck_assert_ptr_null(grad_oracle(d, "from_fixture"));
    ck_assert_msg(strstr(json_string_value(grad_oracle(d, "note")), "spot check"), "no note");
    equal_but_stored(d, ref);
    json_decref(d);
    /* key head 1 is not sampled: taken, and the kernels' gradients FAIL against it */
    d = check_doc(p1, s ? "1" : NULL, 1, NULL, 0);
    ck_assert(json_is_true(grad_oracle(d, "from_fixture")));
    json_decref(d);
  }
  /* the stored forward wrong (its spot check fails): neither it nor its gradients are used, whole and
   * streamed alike, and the document says so */
  const char *fo = at("fo.h5");
  cli_copy_file(f, fo);
  h5e_poke(fo, "/oracle/o", 1, 0.5f); /* (b 0, t 0, h 0, d 1): a column the forward's spot check samples */
  json_t *first = NULL;
  for (int s = 0; s < 2; s++) {
    json_t *d = check_doc(fo, s ? "1" : NULL, 0, log, sizeof log);
    ck_assert_ptr_null(grad_oracle(d, "from_fixture"));
    ck_assert_msg(strstr(json_string_value(grad_oracle(d, "note")), "neither are the gradients"), "no note");
    ck_assert(!json_is_true(json_object_get(json_object_get(d, "oracle"), "from_fixture")));
    if (!s) first = d;
    else {
      ck_assert_msg(json_equal(d, first), "streamed and whole differ with the stored forward refused");
      json_decref(d);
      json_decref(first);
    }
  }
  /* a file without the certificate attribute (the per-tensor bits): taken, those two fields null */
  const char *nc = at("nc.h5");
  cli_copy_file(f, nc);
  hid_t h = h5e_open_rw(nc), grp = H5Gopen2(h, "/oracle/grads", H5P_DEFAULT);
  ck_assert_int_ge(H5Adelete(grp, "certificate"), 0);
  H5Gclose(grp);
  H5Fclose(h);
  json_t *dn = check_doc(nc, NULL, 0, NULL, 0);
  ck_assert(json_is_true(grad_oracle(dn, "from_fixture")));
  ck_assert(json_is_null(grad_oracle(dn, "check_bits")) && json_is_null(grad_oracle(dn, "certified")));
  json_object_del(json_object_get(json_object_get(dn, "grad"), "oracle"), "check_bits");
  json_object_del(json_object_get(json_object_get(dn, "grad"), "oracle"), "certified");
  json_t *rc2 = json_deep_copy(ref);
  json_object_del(json_object_get(json_object_get(rc2, "grad"), "oracle"), "check_bits");
  json_object_del(json_object_get(json_object_get(rc2, "grad"), "oracle"), "certified");
  equal_but_stored(dn, rc2);
  json_decref(rc2);
  json_decref(dn);
  /* certified to fewer than 53 bits: not used, said; the document otherwise the forward-only file's */
  const char *wk = at("wk.h5");
  cli_copy_file(f, wk);
  h5e_set_attr_int(wk, "/oracle/grads", "certified_bits", 40, 1);
  h = h5e_open_rw(wk); /* its per-tensor bits, which would contradict 40, gone too */
  grp = H5Gopen2(h, "/oracle/grads", H5P_DEFAULT);
  ck_assert_int_ge(H5Adelete(grp, "certificate"), 0);
  H5Gclose(grp);
  H5Fclose(h);
  json_t *dw = check_doc(wk, NULL, 0, log, sizeof log);
  ck_assert_msg(strstr(log, "/oracle/grads is not used (certified to 40 bits"), "%s", log);
  ck_assert_msg(strstr(json_string_value(grad_oracle(dw, "note")), "certified to 40 bits"), "no note");
  equal_but_stored(dw, ref);
  json_decref(dw);
  /* a dd regen's: taken with its tier and normwise_bits, the kernels' gradients judged the same */
  const char *dd = at("dd.h5");
  cli_copy_file(fw, dd);
  regen(dd, (const char *const[]){"--grads", "--oracle", "dd", "--force", "--quiet", NULL});
  dw = check_doc(dd, NULL, 0, NULL, 0);
  ck_assert(json_is_true(grad_oracle(dw, "from_fixture")));
  ck_assert_str_eq(json_string_value(grad_oracle(dw, "tier")), "dd");
  ck_assert_int_ge(json_integer_value(grad_oracle(dw, "normwise_bits")), 80);
  ck_assert(json_equal(json_object_get(json_object_get(dw, "grad"), "cases"),
                       json_object_get(json_object_get(ref, "grad"), "cases")));
  json_decref(dw);
  /* other cotangents: stale, recomputed, said */
  const char *st = at("st.h5");
  cli_copy_file(f, st);
  h5e_poke(st, "/cotangents/do", 7, 0.125f);
  cli_result r;
  cli_run_sub(&r, fixture_exe, "verify", st, NULL);
  ck_assert_msg(r.status == 1 && strstr(r.err, "STALE /oracle/grads"), "%d %s", r.status, r.err);
  for (int s = 0; s < 2; s++) { /* its outputs' gradients were for the old cotangents: FAIL */
    json_t *d = check_doc(st, s ? "1" : NULL, 1, log, sizeof log);
    ck_assert_msg(strstr(log, "/oracle/grads is not used (stale"), "%s", log);
    ck_assert_msg(strstr(json_string_value(grad_oracle(d, "note")), "stale"), "no note");
    json_decref(d);
  }
  json_decref(ref);
  dir_end();
}
END_TEST

/* fx's stored gradient set's bytes (binary64). */
static long long set_bytes(const gdn_shape *s) {
  long long n = 0;
  for (int id = 0; id < GDN_GRADS_N; id++) n += 8 * (long long)gdn_chgrads_numel(s, (gdn_grad_id)id);
  return n;
}

/* The whole check of path in this process (parity_recur_check, as gdn-parity check runs it): its heap peak
 * (gdn_alloc's accounting) from the loaded fixture on, with `extra` bytes held beside it throughout. */
static long long check_peak(const char *path, long long extra, const char *want_note) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture fx;
  load(path, &fx);
  parity_recur_check_opts o;
  memset(&o, 0, sizeof o);
  o.rec = parity_recurrence_find("kda", &e);
  ck_assert_ptr_nonnull(o.rec);
  o.name = path, o.oracle_bits = 128;
  void *held = extra ? gdn_malloc((size_t)extra, "held", &e) : NULL;
  gdn_alloc_peak_reset();
  json_t *doc = NULL;
  int pass = 0;
  ck_assert_msg(parity_recur_check(&o, &fx, &doc, &pass, &e) == GDN_OK, "%s", e.msg);
  const long long peak = gdn_alloc_bytes_peak();
  ck_assert(pass);
  json_t *note = grad_oracle(doc, "note");
  if (want_note) ck_assert_msg(note && strstr(json_string_value(note), want_note), "%s: no note", path);
  ck_assert(!fx.oracle.grads.dq); /* an untaken set is freed (its attributes stay) */
  json_decref(doc);
  gdn_free(held);
  fix_fixture_clear(&fx);
  return peak;
}

/* A stored set not taken is freed before the VJP is computed: the whole
 * check's heap peak is the forward-only file's (which computes the same
 * VJP), not one gradient set more.  Negative control: the same bound
 * fails for the forward-only run holding one set more. */
START_TEST(untaken_set_not_held) {
  dir_begin();
  const char *f = at("f.h5"), *fw = at("fw.h5"), *p0 = at("p0.h5");
  synth(f, 1);
  cli_copy_file(f, fw);
  regen(f, (const char *const[]){"--grads", "--quiet", NULL});
  regen(fw, (const char *const[]){"--quiet", NULL});
  cli_copy_file(f, p0);
  h5e_poke(p0, "/oracle/grads/dk", (5 * 4 + 0) * 8 + 3, 0.5f); /* key head 0: the spot check refuses it */
  const gdn_shape s = {1, 64, 4, 8, 8, 8};
  const long long set = set_bytes(&s), base = check_peak(fw, 0, NULL), untaken = check_peak(p0, 0, "spot check");
  ck_assert_msg(llabs(untaken - base) < set / 2, "peak %lld, the forward-only file's %lld, a set %lld", untaken, base,
                set);
  ck_assert(llabs(check_peak(fw, set, NULL) - base) >= set / 2); /* negative control */
  dir_end();
}
END_TEST

START_TEST(refusals) {
  dir_begin();
  const char *f = at("f.h5"), *keep = at("keep.h5");
  synth(f, 0);
  cli_copy_file(f, keep);
  cli_result r;
  cli_run_sub(&r, fixture_exe, "regen", f, (const char *const[]){"--grads", NULL});
  ck_assert_msg(r.status == 2 && strstr(r.err, "no /cotangents"), "%d %s", r.status, r.err);
  ck_assert(cli_same_bytes(f, keep));
  cli_run_sub(&r, exe, "regen", f, (const char *const[]){"--grads", "--group-heads", "1", NULL});
  ck_assert_msg(r.status == 2 && strstr(r.err, "no /cotangents"), "%d %s", r.status, r.err);
  ck_assert(cli_same_bytes(f, keep));
  /* over --max-bytes with the gradients it would compute (the file alone fits): refused, untouched */
  const char *c = at("c.h5"), *ckeep = at("ckeep.h5");
  synth(c, 1);
  cli_copy_file(c, ckeep);
  cli_run_sub(&r, fixture_exe, "regen", c, (const char *const[]){"--grads", "--max-bytes", "300K", NULL});
  ck_assert_msg(r.status == 2 && strstr(r.err, "--grads") && strstr(r.err, "over --max-bytes"), "%d %s", r.status,
                r.err);
  ck_assert(cli_same_bytes(c, ckeep));
  cli_run_sub(&r, fixture_exe, "regen", c, (const char *const[]){"--max-bytes", "300K", "--quiet", NULL});
  ck_assert_msg(r.status == 0, "%d %s", r.status, r.err);
  /* a file with stored gradients: regen never reads them (fix_kda_load_forward), so --grads --force needs
   * exactly what the file without them needs.  At B 1, T 64, Hk 4, Hv 8, Dk = Dv = 8: the float32 inputs
   * 4 (2 x 2,048 + 4,096 + 4,096 + 2 x 512 + 512) = 55,296, the cotangents 18,432, two outputs with their
   * gradients 2 (36,864 + 106,496), the stored forward 36,864, the oracle's o and ht 36,864 and the
   * gradient set it computes 106,496: 540,672 bytes.  That limit passes, one byte less is refused; counting
   * the stored set (106,496 more) the limit would have been refused too. */
  const char *sg = at("sg.h5");
  synth(sg, 1);
  regen(sg, (const char *const[]){"--grads", "--quiet", NULL});
  cli_run_sub(&r, fixture_exe, "regen", sg, (const char *const[]){"--grads", "--force", "--max-bytes", "540671", NULL});
  ck_assert_msg(r.status == 2 && strstr(r.err, "need 5.41e+05 bytes, over --max-bytes 540671"), "%d %s", r.status,
                r.err);
  cli_run_sub(&r, fixture_exe, "regen", sg,
              (const char *const[]){"--grads", "--force", "--max-bytes", "540672", "--quiet", NULL});
  ck_assert_msg(r.status == 0, "%d %s", r.status, r.err);
  /* the loader: /oracle/grads without its tier; a dg of GDN's rank */
  const char *g = at("g.h5"), *g3 = at("g3.h5");
  synth(g, 1);
  regen(g, (const char *const[]){"--grads", "--quiet", NULL});
  cli_copy_file(g, g3);
  cli_run_sub(&r, fixture_exe, "verify", g, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.out, "/oracle/grads fresh (tier mpfr"), "%d %s %s", r.status, r.out, r.err);
  cli_run_sub(&r, fixture_exe, "info", g, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.out, "grads (/oracle/grads): fresh, tier mpfr, precision_bits 128"), "%d %s",
                r.status, r.out);
  hid_t h = h5e_open_rw(g), grp = H5Gopen2(h, "/oracle/grads", H5P_DEFAULT);
  ck_assert_int_ge(H5Adelete(grp, "tier"), 0);
  H5Gclose(grp);
  H5Fclose(h);
  cli_run_sub(&r, fixture_exe, "verify", g, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "/oracle/grads") && strstr(r.err, "tier"), "%d %s", r.status, r.err);
  h = h5e_open_rw(g3);
  grp = H5Gopen2(h, "/oracle/grads", H5P_DEFAULT);
  ck_assert_int_ge(H5Ldelete(grp, "dg", H5P_DEFAULT), 0);
  const hsize_t d3[3] = {1, 64, 8};
  hid_t sp = H5Screate_simple(3, d3, NULL),
        d = H5Dcreate2(grp, "dg", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ck_assert_int_ge(d, 0);
  H5Dclose(d);
  H5Sclose(sp);
  H5Gclose(grp);
  H5Fclose(h);
  cli_run_sub(&r, fixture_exe, "verify", g3, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "/oracle/grads/dg") && strstr(r.err, "(B, T, Hv, Dk)"), "%d %s",
                r.status, r.err);
  /* a certificate whose least tensor bits are not certified_bits */
  const char *gc = at("gc.h5");
  synth(gc, 1);
  regen(gc, (const char *const[]){"--grads", "--quiet", NULL});
  fix_fixture x;
  load(gc, &x);
  long long cert[7] = {x.oracle.grads_check_bits};
  for (int id = 0; id < GDN_GRADS_N; id++) cert[1 + id] = x.oracle.grads_tensor_bits[id] + 1;
  fix_fixture_clear(&x);
  const hsize_t seven = 7;
  h = h5e_open_rw(gc);
  grp = H5Gopen2(h, "/oracle/grads", H5P_DEFAULT);
  ck_assert_int_ge(H5Adelete(grp, "certificate"), 0);
  sp = H5Screate_simple(1, &seven, NULL);
  hid_t a = H5Acreate2(grp, "certificate", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
  ck_assert_int_ge(H5Awrite(a, H5T_NATIVE_LLONG, cert), 0);
  H5Aclose(a);
  H5Sclose(sp);
  H5Gclose(grp);
  H5Fclose(h);
  cli_run_sub(&r, fixture_exe, "verify", gc, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "/oracle/grads") && strstr(r.err, "certificate"), "%d %s", r.status,
                r.err);
  dir_end();
}
END_TEST

CKR_MAIN_ARGS("test_kda_stored_grads PATH-TO-gdn-parity PATH-TO-gdn-fixture", 2, (&exe, &fixture_exe),
              "kda_stored_grads", "kda_stored_grads", 600, regen_stores_the_vjp, check_takes_the_stored_vjp, refusals,
              untaken_set_not_held)
