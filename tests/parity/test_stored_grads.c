/* The oracle's gradients stored beside its forward (regen --grads,
 * /oracle/grads; fix_regen_grads.h, parity_stored_grads.h), end to end
 * through gdn-fixture and gdn-parity:
 *   - regen --grads stores exactly the oracle's VJP for the file's
 *     cotangents (oracle_vjp_certified here, bit for bit) with its
 *     certificate and grad_problem_sha256; by groups of 1 and 3 key heads
 *     the same values and attributes; the dd tier within 2^-80 of MPFR's
 *     with its own certificate; gdn-parity regen --grads is gdn-fixture's
 *     file; a regen without --grads drops them, whole and by group.
 *     Negative control: one planted element is found by the same
 *     comparison;
 *   - check takes the stored gradients instead of computing the VJP: the
 *     document is the forward-only file's but for oracle_grad_from_fixture
 *     and its spot check, whole and streamed by head group (the same bytes);
 *   - a stored gradient wrong at key head 0 fails the spot check: the VJP is
 *     computed, the document says why (oracle_grad_note) and is otherwise
 *     the forward-only file's; one wrong at key head 1 is not seen (the
 *     spot check samples one key head, as the forward's samples columns:
 *     docs/fixture-schema-v3.md says so) and the check FAILs against it;
 *   - the stored forward refused (its spot check): its gradients are not
 *     used either, whole and streamed the same document, which says so;
 *   - other cotangents make it stale: verify exits 1 naming it, check
 *     recomputes and says so;
 *   - refusals: --grads without /cotangents (exit 2, the file unchanged); a
 *     /oracle/grads without its tier attribute is refused by the loader. */
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
#include "../reports/test_util.h"
#include "cli_files.h"
#include "fix_load.h"
#include "oracle_vjp.h"

static char *exe, *fixture_exe;
/* The test's files, in a fresh scratch folder (cli_run.h) removed with
 * whatever is left in it. */
static void dir_begin(void) { cli_scratch_make(); }
static void dir_end(void) { cli_scratch_remove(); }
static const char *at(const char *name) { return cli_path(name); }

/* f.h5: h0, 4 key heads of 2 value heads, cotangents, two kernel outputs
 * with their gradients; `grad` 0: no cotangents. */
static void synth(const char *path, int grad) {
  cli_result r;
  const char *args[16] = {"--shape", "1,96,8,8", "--key-heads", "4", "--h0", "--slow-gates", "--kernel-outputs", "1,2",
                          "--out", path, NULL};
  if (grad) args[10] = "--grad";
  cli_run_sub(&r, fixture_exe, "synth", NULL, args);
  ck_assert_msg(r.status == 0, "synth: %s", r.err);
}

static void regen(const char *path, const char *const *args) { cli_regen(fixture_exe, path, args); }

/* fx: not holding anything (load initialises it; clear it after use). */
static void load(const char *path, fix_fixture *fx) {
  fix_load_opts lo;
  fix_load_opts_init(&lo);
  lo.oracle_grads = 1;
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture_init(fx);
  ck_assert_msg(fix_load(fx, path, &lo, &e) == GDN_OK, "%s", e.msg);
}

/* Elements of a and b that differ (bits), over the six tensors. */
static long differ(const gdn_grads *a, const gdn_grads *b) {
  long n = 0;
  for (int id = 0; id < GDN_GRADS_N; id++) {
    const double *x = gdn_grads_tensor_c(a, (gdn_grad_id)id), *y = gdn_grads_tensor_c(b, (gdn_grad_id)id);
    for (size_t i = 0; i < gdn_grads_numel(&a->shape, (gdn_grad_id)id); i++) n += memcmp(&x[i], &y[i], 8) != 0;
  }
  return n;
}

static void same_attrs(const fix_oracle *a, const fix_oracle *b) {
  ck_assert_int_eq(a->grads_tier_dd, b->grads_tier_dd);
  ck_assert_int_eq(a->grads_precision_bits, b->grads_precision_bits);
  ck_assert_int_eq(a->grads_certified_bits, b->grads_certified_bits);
  ck_assert_int_eq(a->grads_normwise_bits, b->grads_normwise_bits);
  ck_assert_str_eq(a->grad_problem_sha256, b->grad_problem_sha256);
}

START_TEST(regen_stores_the_vjp) {
  dir_begin();
  const char *f = at("f.h5");
  synth(f, 1);
  cli_copy_file(f, at("g1.h5"));
  cli_copy_file(f, at("g3.h5"));
  cli_copy_file(f, at("dd.h5"));
  cli_copy_file(f, at("ddg.h5"));
  cli_copy_file(f, at("p.h5"));
  regen(f, (const char *const[]){"--grads", "--quiet", NULL});
  regen(at("g1.h5"), (const char *const[]){"--grads", "--group-heads", "1", "--quiet", NULL});
  regen(at("g3.h5"), (const char *const[]){"--grads", "--group-heads", "3", "--quiet", NULL});
  regen(at("dd.h5"), (const char *const[]){"--grads", "--oracle", "dd", "--quiet", NULL});
  regen(at("ddg.h5"), (const char *const[]){"--grads", "--oracle", "dd", "--group-heads", "1", "--quiet", NULL});
  fix_fixture w, x;
  load(f, &w);
  ck_assert(w.oracle.has_grads && w.oracle.grads_fresh && !w.oracle.grads_tier_dd);
  ck_assert_str_eq(w.oracle.grad_problem_sha256, w.grad_problem_sha256);
  /* exactly the certified MPFR VJP of the file's inputs and cotangents */
  gdn_grads v;
  gdn_grads_init(&v);
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  oracle_vjp_certificate cert;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_msg(oracle_vjp_certified(&w.inputs, &w.cot, &cfg, &v, &cert, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(differ(&w.oracle.grads, &v), 0);
  ck_assert_int_eq(w.oracle.grads_certified_bits, cert.certified_bits);
  ck_assert_int_eq(w.oracle.grads_precision_bits, 128);
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
  for (int id = 0; id < GDN_GRADS_N; id++) { /* dd within 2^-80 of the tensor's largest value */
    const double *a = gdn_grads_tensor_c(&dd.oracle.grads, (gdn_grad_id)id), *b = gdn_grads_tensor_c(&v, (gdn_grad_id)id);
    double big = 0, d = 0;
    for (size_t i = 0; i < gdn_grads_numel(&v.shape, (gdn_grad_id)id); i++) {
      big = fabs(b[i]) > big ? fabs(b[i]) : big;
      d = fabs(a[i] - b[i]) > d ? fabs(a[i] - b[i]) : d;
    }
    ck_assert_msg(d <= 0x1p-80 * big, "%s: dd differs by %g of %g", gdn_grads_name((gdn_grad_id)id), d, big);
  }
  /* negative control: one element planted in a copy is found */
  cli_copy_file(at("g1.h5"), at("p.h5"));
  h5e_poke(at("p.h5"), "/oracle/grads/dv", 17, 0.25f);
  load(at("p.h5"), &x);
  ck_assert_int_eq(differ(&x.oracle.grads, &w.oracle.grads), 1);
  fix_fixture_clear(&x);
  /* a regen without --grads drops them, whole and by group (no stale gradients outlive their forward) */
  for (int i = 0; i < 2; i++) {
    cli_copy_file(at("g1.h5"), at("drop.h5"));
    regen(at("drop.h5"), i ? (const char *const[]){"--force", "--group-heads", "1", "--quiet", NULL}
                           : (const char *const[]){"--force", "--quiet", NULL});
    load(at("drop.h5"), &x);
    ck_assert_msg(!x.oracle.has_grads && !x.oracle.grads.dq, "regen without --grads left /oracle/grads (%d)", i);
    fix_fixture_clear(&x);
  }
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

/* check --json of path (extra: more options) into json's file; the
 * document with its file-naming fields removed. */
static json_t *check_doc(const char *path, const char *extra, int want, char *log, size_t n) {
  const char *jp = at("doc.json");
  cli_check_json(exe, path, extra, want, jp, log, n);
  json_error_t je;
  json_t *d = json_load_file(jp, 0, &je);
  ck_assert_ptr_nonnull(d);
  json_object_del(d, "command");
  json_t *in = json_array_get(json_object_get(d, "inputs"), 0);
  json_object_del(in, "name");
  json_object_del(in, "path");
  unlink(jp);
  return d;
}

/* The input's field k of document d (NULL: absent). */
static json_t *input_field(json_t *d, const char *k) {
  return json_object_get(json_array_get(json_object_get(d, "inputs"), 0), k);
}

/* d without the stored gradients' own fields equals ref. */
static void equal_but_stored(json_t *d, json_t *ref) {
  json_t *c = json_deep_copy(d), *in = json_array_get(json_object_get(c, "inputs"), 0);
  json_object_del(in, "oracle_grad_from_fixture");
  json_object_del(in, "oracle_grad_spot_check");
  json_object_del(in, "oracle_grad_note");
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
  ck_assert(json_is_true(input_field(whole, "oracle_grad_from_fixture")));
  ck_assert(json_real_value(json_object_get(input_field(whole, "oracle_grad_spot_check"), "rel")) == 0.0);
  ck_assert_ptr_null(input_field(ref, "oracle_grad_from_fixture"));
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
    ck_assert_ptr_null(input_field(d, "oracle_grad_from_fixture"));
    ck_assert_msg(strstr(json_string_value(input_field(d, "oracle_grad_note")), "spot check"), "no note");
    equal_but_stored(d, ref);
    json_decref(d);
    /* key head 1 is not sampled: taken, and the kernels FAIL against it (the spot check's reach, said in
     * docs/fixture-schema-v3.md: the FAIL names dk at key head 1, where the reference itself is wrong) */
    d = check_doc(p1, s ? "1" : NULL, 1, NULL, 0);
    ck_assert(json_is_true(input_field(d, "oracle_grad_from_fixture")));
    json_decref(d);
  }
  /* the stored forward wrong (its spot check fails): neither it nor its gradients are used, whole and
   * streamed alike, and the document says so */
  const char *fo = at("fo.h5");
  cli_copy_file(f, fo);
  h5e_poke(fo, "/oracle/o", 1, 0.5f); /* (b 0, t 0, h 0, d 1): a column the forward's spot check samples */
  for (int s = 0; s < 2; s++) {
    json_t *d = check_doc(fo, s ? "1" : NULL, 0, log, sizeof log);
    ck_assert_ptr_null(input_field(d, "oracle_grad_from_fixture"));
    ck_assert_msg(strstr(json_string_value(input_field(d, "oracle_grad_note")), "neither are the gradients"),
                  "no note");
    ck_assert(!json_is_true(input_field(d, "oracle_from_fixture")));
    if (!s) whole = d;
    else {
      ck_assert_msg(json_equal(d, whole), "streamed and whole differ with the stored forward refused");
      json_decref(d);
      json_decref(whole);
    }
  }
  /* other cotangents: stale, recomputed, said */
  const char *st = at("st.h5");
  cli_copy_file(f, st);
  h5e_poke(st, "/cotangents/do", 7, 0.125f);
  cli_result r;
  cli_run_sub(&r, fixture_exe, "verify", st, NULL);
  ck_assert_msg(r.status == 1 && strstr(r.err, "STALE /oracle/grads"), "%d %s", r.status, r.err);
  json_t *d = check_doc(st, NULL, 1, log, sizeof log); /* its outputs' gradients were for the old cotangents */
  ck_assert_msg(strstr(log, "/oracle/grads is not used (stale"), "%s", log);
  ck_assert_msg(strstr(json_string_value(input_field(d, "oracle_grad_note")), "stale"), "no note");
  json_decref(d);
  json_decref(ref);
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
  /* the loader: /oracle/grads without its tier */
  const char *g = at("g.h5");
  synth(g, 1);
  regen(g, (const char *const[]){"--grads", "--quiet", NULL});
  cli_run_sub(&r, fixture_exe, "verify", g, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.out, "/oracle/grads fresh (tier mpfr"), "%d %s %s", r.status, r.out, r.err);
  hid_t h = h5e_open_rw(g), grp = H5Gopen2(h, "/oracle/grads", H5P_DEFAULT);
  ck_assert_int_ge(H5Adelete(grp, "tier"), 0);
  H5Gclose(grp);
  H5Fclose(h);
  cli_run_sub(&r, fixture_exe, "verify", g, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "/oracle/grads") && strstr(r.err, "tier"), "%d %s", r.status, r.err);
  dir_end();
}
END_TEST

CKR_MAIN_ARGS("test_stored_grads PATH-TO-gdn-parity PATH-TO-gdn-fixture", 2, (&exe, &fixture_exe), "stored_grads",
              "stored_grads", 600, regen_stores_the_vjp, check_takes_the_stored_vjp, refusals)
