/* parity_padding: outputs at padding tokens and the final state under
 * packing are judged only as an output declares (parity_padding.h).
 * End to end through `gdn-parity check --fixture` on one fixture (packed
 * documents, reset, h0, slow gates, B 2, T 96: 3 padding tokens at each
 * row's end), whose outputs are the MPFR oracle rounded to float32 under
 * one of two conventions for padding:
 *   oracle's   k = v = g = 0 at padding (the state passes through it);
 *   segment    padding is one more document of the raw inputs (its ids
 *              replaced by a fresh one), so o there and ht differ, o on
 *              every document agrees.
 * Cases: segment, nothing declared: PASS, o at padding and ht not judged;
 * the same with one element inside a document off by 1e-3 of max |o|: FAIL
 * (negative control); segment declaring padding zeroed: FAIL (judged there);
 * oracle's declaring padding zeroed: PASS, judged there; segment declaring
 * final_state last_document with its own ht: FAIL, and with the last
 * document's state as ht: PASS.  The rounded outputs are checked to differ
 * at padding (else the test proves nothing). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fix.h"
#include "gdn_synth.h"
#include "parity_cli.h"
#include "parity_padding.h"
#include "report.h"
#include "../check_runner.h"
#include "synth_fixture.h"
#include "cli_inproc.h"

/* The reference of fx's inputs, with padding as one more segment when asked. */
static void reference(const fix_fixture *fx, int pad_as_segment, parity_reference *ref) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs in;
  gdn_inputs_init(&in);
  ck_assert_int_eq(gdn_inputs_copy(&in, &fx->inputs, &e), GDN_OK);
  for (int64_t i = 0; pad_as_segment && i < in.shape.B * in.shape.T; i++)
    if (in.seg[i] == 0) in.seg[i] = 1000;
  parity_reference_init(ref);
  ck_assert_msg(parity_reference_compute(ref, &in, PARITY_ORACLE_MPFR, 128, &e) == GDN_OK, "%s", e.msg);
  gdn_inputs_clear(&in);
}

/* An output: o from `ro` rounded to float32, ht from `rh`; attrs declared. */
static fix_output *add_output(fix_fixture *fx, const char *name, const parity_reference *ro,
                              const parity_reference *rh, const char *padding, const char *final_state) {
  gdn_error e;
  gdn_error_init(&e);
  fix_output *o;
  ck_assert_int_eq(fix_fixture_add_output(fx, name, &o, &e), GDN_OK);
  ck_assert_int_eq(gdn_outputs_alloc(&o->out, &fx->inputs.shape, GDN_DTYPE_F32, &e), GDN_OK);
  for (size_t i = 0; i < gdn_shape_numel_v(&fx->inputs.shape); i++) o->out.o[i] = (float)ro->out.o[i];
  for (size_t i = 0; i < gdn_shape_numel_state(&fx->inputs.shape); i++) o->out.ht[i] = (float)rh->out.ht[i];
  o->has_ht = 1;
  sfx_output_attrs(o, "test", NULL, 1);
  ck_assert_int_eq(fix_set_string(&o->packing, "reset", &e), GDN_OK);
  if (padding) ck_assert_int_eq(fix_set_string(&o->padding, padding, &e), GDN_OK);
  if (final_state) ck_assert_int_eq(fix_set_string(&o->final_state, final_state, &e), GDN_OK);
  return o;
}

static json_t *impl(json_t *doc, const char *name) {
  json_t *c = json_array_get(json_object_get(doc, "cases"), 0);
  json_t *x = json_object_get(json_object_get(c, "impls"), name);
  ck_assert_msg(x != NULL, "no impl %s", name);
  return x;
}

static const char *attr(json_t *doc, const char *name, const char *k) {
  const char *s = json_string_value(json_object_get(json_object_get(impl(doc, name), "attrs"), k));
  return s ? s : "(none)";
}

static void expect(json_t *doc, const char *name, int pass, const char *padding_judged, const char *ht_judged) {
  ck_assert_msg(json_is_boolean(json_object_get(impl(doc, name), "pass")), "%s: no verdict", name);
  ck_assert_msg(json_is_true(json_object_get(impl(doc, name), "pass")) == pass, "%s: expected %s", name,
                pass ? "PASS" : "FAIL");
  ck_assert_msg(strstr(attr(doc, name, "padding_judged"), padding_judged), "%s: %s", name,
                attr(doc, name, "padding_judged"));
  ck_assert_msg(strstr(attr(doc, name, "final_state_judged"), ht_judged), "%s: %s", name,
                attr(doc, name, "final_state_judged"));
}

START_TEST(padding_and_final_state_judged_as_declared) {
  gdn_error e;
  gdn_error_init(&e);
  fix_fixture fx;
  sfx_make(&fx, (gdn_shape){2, 96, 1, 2, 16, 16}, 3, GDN_SYNTH_H0 | GDN_SYNTH_SLOW_GATES, 32);
  ck_assert_int_eq(gdn_synth_segments(&fx.inputs, 3, 3, &e), GDN_OK);
  fx.inputs.packing = GDN_PACKING_RESET;
  ck_assert_int_eq(parity_padding_tokens(&fx.inputs), 6);
  ck_assert_int_eq(parity_padding_rows_ending(&fx.inputs), 2);
  parity_reference oracle, seg;
  reference(&fx, 0, &oracle);
  reference(&fx, 1, &seg);
  /* the two conventions differ at padding and in ht, and agree elsewhere */
  const gdn_shape *s = &fx.inputs.shape;
  const size_t row = (size_t)(s->Hv * s->Dv);
  double dpad = 0, ddoc = 0, dht = 0, mo = 0;
  for (size_t i = 0; i < gdn_shape_numel_v(s); i++) {
    double d = fabs(oracle.out.o[i] - seg.out.o[i]);
    if (fx.inputs.seg[i / row] == 0) dpad = fmax(dpad, d);
    else ddoc = fmax(ddoc, d);
    mo = fmax(mo, fabs(oracle.out.o[i]));
  }
  for (size_t i = 0; i < gdn_shape_numel_state(s); i++) dht = fmax(dht, fabs(oracle.out.ht[i] - seg.out.ht[i]));
  ck_assert_msg(ddoc == 0 && dpad > 1e-2 * mo && dht > 1e-2, "doc %g pad %g ht %g (max |o| %g)", ddoc, dpad, dht,
                mo);
  add_output(&fx, "segment", &seg, &seg, NULL, NULL);
  fix_output *bug = add_output(&fx, "segment_bug", &seg, &seg, NULL, NULL);
  const size_t planted = (size_t)40 * row + 3; /* row 0, t = 40: inside a document */
  ck_assert_int_ne(fx.inputs.seg[planted / row], 0);
  bug->out.o[planted] = (float)(bug->out.o[planted] + 1e-3 * mo);
  add_output(&fx, "segment_says_zeroed", &seg, &seg, "zeroed", NULL);
  add_output(&fx, "oracle_says_zeroed", &oracle, &oracle, "zeroed", NULL);
  add_output(&fx, "segment_says_last_doc", &seg, &seg, NULL, "last_document");
  add_output(&fx, "last_doc_state", &seg, &oracle, NULL, "last_document");
  parity_reference_clear(&oracle);
  parity_reference_clear(&seg);
  char path[] = "/tmp/gdn-padding-XXXXXX.h5", js[] = "/tmp/gdn-padding-XXXXXX.json";
  close(mkstemps(path, 3));
  close(mkstemps(js, 5));
  ck_assert_msg(fix_write(&fx, path, &e) == GDN_OK, "%s", e.msg);
  fix_fixture_clear(&fx);
  /* the attributes survive the file */
  fix_fixture back;
  sfx_load(&back, path);
  const fix_output *z = fix_fixture_find_output(&back, "segment_says_zeroed");
  ck_assert(z && z->padding && !strcmp(z->padding, "zeroed") && !z->final_state);
  ck_assert_str_eq(fix_fixture_find_output(&back, "last_doc_state")->final_state, "last_document");
  fix_fixture_clear(&back);
  char *av[] = {"gdn-parity", "check", "--fixture", path, "--devices", "1", "--oracle", "mpfr",
                "--json", js, "--reproducible", NULL};
  int st = cli_inproc(av, &e);
  ck_assert_msg(st >= 0, "%s", e.msg);
  json_t *doc = NULL;
  ck_assert_msg(report_json_read(js, &doc, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(st, 1);
  expect(doc, "segment", 1, "not judged at the 6 padding tokens", "ht not judged: 2 row(s) end in padding");
  expect(doc, "segment_bug", 0, "not judged", "ht not judged");
  expect(doc, "segment_says_zeroed", 0, "judged at the 6 padding tokens", "after each row's last token");
  expect(doc, "oracle_says_zeroed", 1, "judged at the 6 padding tokens", "after each row's last token");
  expect(doc, "segment_says_last_doc", 0, "not judged", "end of each row's last document (final_state");
  expect(doc, "last_doc_state", 1, "not judged", "end of each row's last document (final_state");
  ck_assert_str_eq(json_string_value(json_object_get(impl(doc, "segment"), "judged_on")),
                   "o alone: its ht is not judged (attrs final_state_judged)");
  ck_assert_ptr_null(json_object_get(impl(doc, "last_doc_state"), "judged_on"));
  /* the packing is still told from the documents alone */
  ck_assert_str_eq(attr(doc, "segment", "packing_matched"), "reset");
  json_decref(doc);
  unlink(path);
  unlink(js);
}
END_TEST

CKR_MAIN_FORK(CK_NOFORK, "padding", "padding", 300, padding_and_final_state_judged_as_declared)
