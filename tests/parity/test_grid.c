#include <check.h>
#include <stdio.h>
#include <string.h>

#include "parity_grid.h"
#include "../check_runner.h"

static void base(parity_synth_spec *sp, parity_sweep_opts *o) {
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_synth_spec_from_cli(sp, NULL, NULL, NULL, "7", 0, NULL, NULL, NULL, &e), GDN_OK);
  parity_sweep_opts_init(o);
}

START_TEST(entries_inherit_and_override) {
  parity_synth_spec sp;
  parity_sweep_opts o;
  base(&sp, &o);
  const char *text = "{\"name\":\"g\",\"entries\":["
                     "{\"shape\":\"1,100,4,16\"},"
                     "{\"shape\":\"2,50,4,8\",\"key_heads\":2,\"dv\":12,\"h0\":true,\"seed\":3,"
                     "\"chunk\":[16,8],\"devices\":3,\"prefix\":\"hillis-steele\",\"dtype\":\"float64\",\"grad\":true}]}";
  parity_grid g;
  parity_grid_init(&g);
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(parity_grid_parse(&g, text, "g.json", &sp, &o, &e), GDN_OK);
  ck_assert_uint_eq(g.n, 2);
  ck_assert_int_eq(g.entries[0].spec.synth.seed, 7);
  ck_assert_uint_eq(g.entries[0].opts.n_devices, 4);
  const parity_grid_entry *b = &g.entries[1];
  ck_assert_int_eq(b->spec.shape.Hk, 2);
  ck_assert_int_eq(b->spec.shape.Hv, 4);
  ck_assert_int_eq(b->spec.shape.Dv, 12);
  ck_assert_int_eq(b->spec.shape.Dk, 8);
  ck_assert(b->spec.synth.flags & GDN_SYNTH_H0);
  ck_assert_int_eq(b->spec.synth.seed, 3);
  ck_assert_uint_eq(b->opts.n_chunks, 2);
  ck_assert_int_eq(b->opts.chunks[1], 8);
  ck_assert_uint_eq(b->opts.n_devices, 1);
  ck_assert_int_eq(b->opts.devices[0], 3);
  ck_assert_int_eq(b->opts.prefixes[0], KERN_PREFIX_HILLIS_STEELE);
  ck_assert_int_eq(b->opts.dtype, GDN_DTYPE_F64);
  ck_assert(b->spec.grad && !g.entries[0].spec.grad);
  parity_grid_clear(&g);
}
END_TEST

/* Entries that differ only in a key that changes the cases (packing,
 * documents, shard, solve, grad) are not repeats; the same entry twice is
 * (the control).  grids/default.json has such a pair (packing leak / reset). */
START_TEST(repeats_need_every_key_equal) {
  static const char *const differ[] = {
      "{\"shape\":\"1,64,1,8\",\"documents\":2,\"packing\":\"leak\"},{\"shape\":\"1,64,1,8\",\"documents\":2,\"packing\":\"reset\"}",
      "{\"shape\":\"1,64,1,8\",\"documents\":2},{\"shape\":\"1,64,1,8\",\"documents\":3}",
      "{\"shape\":\"1,64,1,8\",\"shard\":\"chunks\"},{\"shape\":\"1,64,1,8\",\"shard\":\"tokens\"}",
      "{\"shape\":\"1,64,1,8\",\"solve\":\"xla-expander\"},{\"shape\":\"1,64,1,8\"}",
      "{\"shape\":\"1,64,1,8\",\"grad\":true},{\"shape\":\"1,64,1,8\"}",
      "{\"shape\":\"1,64,1,8\",\"grad\":true},{\"shape\":\"1,64,1,8\",\"grad\":true}"};
  for (size_t i = 0; i < sizeof differ / sizeof differ[0]; i++) {
    parity_synth_spec sp;
    parity_sweep_opts o;
    base(&sp, &o);
    char text[512];
    snprintf(text, sizeof text, "{\"entries\":[%s]}", differ[i]);
    parity_grid g;
    parity_grid_init(&g);
    gdn_error e;
    gdn_error_init(&e);
    int last = i + 1 == sizeof differ / sizeof differ[0];
    ck_assert_msg(parity_grid_parse(&g, text, "g.json", &sp, &o, &e) == (last ? GDN_ERR_INPUT : GDN_OK), "%zu: %s",
                  i, e.msg);
    if (last) ck_assert_ptr_nonnull(strstr(e.msg, "repeats entry 0"));
    parity_grid_clear(&g);
  }
}
END_TEST

START_TEST(bad_grids) {
  static const struct { const char *text, *needle; } t[] = {
      {"{\"entries\":[]}", "non-empty"},
      {"{\"entries\":[{}]}", "entry 0: \"shape\""},
      {"{\"entries\":[{\"shape\":\"1,2,3\"}]}", "3 fields"},
      {"{\"entries\":[{\"shape\":\"1,8,4,8\",\"key_heads\":3}]}", "do not divide"},
      {"{\"entries\":[{\"shape\":\"1,8,4,8\",\"devices\":[1,1]}]}", "twice"},
      {"{\"entries\":[{\"shape\":\"1,8,4,8\",\"prefix\":[\"tree\"]}]}", "'tree'"},
      {"{\"entries\":[{\"shape\":\"1,8,4,8\",\"dtype\":\"half\"}]}", "'half'"},
      {"{\"entries\":[{\"shape\":\"1,8,4,8\",\"colour\":1}]}", "unknown key \"colour\""},
      {"{\"entries\":[{\"shape\":\"1,8,4,8\",\"chunk\":[0]}]}", "\"chunk\"[0]"},
      {"{\"entries\":[{\"shape\":\"1,8,4,8\"}],\"x\":1}", "unknown top-level key"},
      {"{\"entries\":[{\"shape\":\"1,8,4,8\",\"grad\":1}]}", "\"grad\" must be true or false"},
  };
  parity_synth_spec sp;
  parity_sweep_opts o;
  base(&sp, &o);
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    parity_grid g;
    parity_grid_init(&g);
    gdn_error e;
    gdn_error_init(&e);
    ck_assert_int_eq(parity_grid_parse(&g, t[i].text, "g.json", &sp, &o, &e), GDN_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, t[i].needle) && strstr(e.msg, "g.json"), "case %zu: '%s' lacks '%s'", i,
                  e.msg, t[i].needle);
    ck_assert_uint_eq(g.n, 0);
  }
}
END_TEST

CKR_MAIN("grid", "grid", 0, entries_inherit_and_override, bad_grids, repeats_need_every_key_equal)
