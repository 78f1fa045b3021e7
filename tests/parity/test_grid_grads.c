/* parity_grid_check_policy with gradient entries: the dry run
 * refuses, before anything runs, an entry whose gradient rows no rule
 * judges -- per tensor, since coverage of a subject by its o rows alone
 * would let the gate pass gradients unjudged.  A bfloat16 gradient entry
 * passes with the built-in policy (its grad-*-bfloat16 rules) and is
 * refused by a policy without them.  Each refusal has a positive control
 * that passes. */
#include <check.h>
#include <string.h>

#include "parity_grid.h"
#include "parity_oracle.h"
#include "parity_policy.h"
#include "../check_runner.h"

/* Forward rules only: covers o and ht of both kernels, no gradient. */
static const char *forward_only =
    "{\"name\":\"fwd\",\"rules\":["
    "{\"id\":\"rel\",\"kind\":\"relative\",\"subject\":\"affine-prefix\",\"metric\":\"rel_fro\",\"factor\":2,"
    "\"floor_u\":8,\"reason\":\"r\"},"
    "{\"id\":\"band\",\"kind\":\"absolute\",\"dtype\":\"float32\",\"metric\":\"rel_fro\",\"limit_u\":64,"
    "\"reason\":\"r\"}]}";

/* The same plus a band on dq, dk, dv, dg, dbeta but not dh0. */
static const char *grads_but_dh0 =
    "{\"name\":\"g5\",\"rules\":["
    "{\"id\":\"band\",\"kind\":\"absolute\",\"dtype\":\"float32\",\"metric\":\"rel_fro\",\"limit_u\":64,"
    "\"reason\":\"r\"},"
    "{\"id\":\"gband\",\"kind\":\"absolute\",\"dtype\":\"float32\",\"tensors\":[\"dq\",\"dk\",\"dv\",\"dg\","
    "\"dbeta\"],\"metric\":\"rel_fro\",\"limit_u\":64,\"reason\":\"r\"}]}";

/* Every row covered in every dtype, but the gradients in float32 only. */
static const char *f32_grads_only =
    "{\"name\":\"g32\",\"rules\":["
    "{\"id\":\"band\",\"kind\":\"absolute\",\"metric\":\"rel_fro\",\"limit_u\":64,\"reason\":\"r\"},"
    "{\"id\":\"gband\",\"kind\":\"absolute\",\"dtype\":\"float32\",\"tensors\":[\"dq\",\"dk\",\"dv\",\"dg\","
    "\"dbeta\",\"dh0\"],\"metric\":\"rel_fro\",\"limit_u\":64,\"reason\":\"r\"}]}";

static parity_grid_entry entry(int grad, gdn_dtype dt) {
  parity_grid_entry ge;
  memset(&ge, 0, sizeof ge);
  parity_sweep_opts_init(&ge.opts);
  ge.opts.dtype = dt;
  ge.opts.matmul = KERN_MATMUL_HIGHEST;
  ge.spec.grad = grad;
  return ge;
}

static int dry(const char *text, int grad, gdn_dtype dt, int oracle, gdn_error *e) {
  parity_policy p;
  parity_policy_init(&p);
  gdn_error_init(e);
  int rc = text ? parity_policy_parse(&p, text, "/tmp/policies/user.json", e) : parity_policy_load_builtin(&p, e);
  ck_assert_msg(rc == GDN_OK, "%s", e->msg);
  parity_grid_entry ge = entry(grad, dt);
  rc = parity_grid_check_policy(&ge, &p, oracle, e);
  parity_policy_clear(&p);
  return rc;
}

START_TEST(builtin_policy_covers_gradient_entries) {
  gdn_error e;
  ck_assert_msg(dry(NULL, 1, GDN_DTYPE_F32, 1, &e) == GDN_OK, "%s", e.msg);
  ck_assert_msg(dry(NULL, 1, GDN_DTYPE_F64, 1, &e) == GDN_OK, "%s", e.msg);
  ck_assert_msg(dry(NULL, 1, GDN_DTYPE_F32, 0, &e) == GDN_OK, "%s", e.msg); /* grad-no-oracle-float32 */
}
END_TEST

START_TEST(gradient_rows_without_a_rule_are_refused) {
  gdn_error e;
  /* control: the forward-only policy is enough without gradients */
  ck_assert_msg(dry(forward_only, 0, GDN_DTYPE_F32, 1, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(dry(forward_only, 1, GDN_DTYPE_F32, 1, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "no rule for the gradient dq of scan"), "%s", e.msg);
  /* the policy named by its file, not only by its name field */
  ck_assert_msg(strstr(e.msg, "policy /tmp/policies/user.json (name 'fwd') has no rule"), "%s", e.msg);
  /* one tensor short: dh0 named */
  ck_assert_int_eq(dry(grads_but_dh0, 1, GDN_DTYPE_F32, 1, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "gradient dh0 of scan"), "%s", e.msg);
  ck_assert_msg(dry(grads_but_dh0, 0, GDN_DTYPE_F32, 1, &e) == GDN_OK, "%s", e.msg);
}
END_TEST

START_TEST(bfloat16_gradient_entry_needs_its_rules) {
  gdn_error e;
  ck_assert_msg(dry(NULL, 0, GDN_DTYPE_BF16, 1, &e) == GDN_OK, "%s", e.msg);
  ck_assert_msg(dry(NULL, 1, GDN_DTYPE_BF16, 1, &e) == GDN_OK, "%s", e.msg);
  ck_assert_msg(dry(NULL, 1, GDN_DTYPE_BF16, 0, &e) == GDN_OK, "%s", e.msg);
  /* control: rules for float32 gradients only leave bfloat16's unjudged */
  ck_assert_msg(dry(f32_grads_only, 1, GDN_DTYPE_F32, 1, &e) == GDN_OK, "%s", e.msg);
  ck_assert_msg(dry(f32_grads_only, 0, GDN_DTYPE_BF16, 1, &e) == GDN_OK, "%s", e.msg);
  ck_assert_int_eq(dry(f32_grads_only, 1, GDN_DTYPE_BF16, 1, &e), GDN_ERR_INPUT);
  ck_assert_msg(strstr(e.msg, "no rule for the gradient dq of scan (dtype bfloat16"), "%s", e.msg);
}
END_TEST

/* --oracle auto for the gradients counts the VJP (5x the forward) with the
 * forward: 1,8192,1,128 costs 4.0e8 MACs forward (MPFR, under 1e9) but
 * 2.4e9 with its VJP (dd); 1,1024,1,128 (5.0e7, 3.0e8 with it) stays MPFR;
 * explicit tiers pass through. */
START_TEST(auto_counts_the_vjp_cost) {
  gdn_shape big = {1, 8192, 1, 1, 128, 128}, small = {1, 1024, 1, 1, 128, 128};
  ck_assert_int_eq(parity_oracle_resolve(PARITY_ORACLE_AUTO, &big, 128), PARITY_ORACLE_MPFR);
  ck_assert_int_eq(parity_oracle_resolve_grads(PARITY_ORACLE_AUTO, &big, 128), PARITY_ORACLE_DD);
  ck_assert_int_eq(parity_oracle_resolve_grads(PARITY_ORACLE_AUTO, &small, 128), PARITY_ORACLE_MPFR);
  ck_assert_int_eq(parity_oracle_resolve_grads(PARITY_ORACLE_MPFR, &big, 128), PARITY_ORACLE_MPFR);
  ck_assert_int_eq(parity_oracle_resolve_grads(PARITY_ORACLE_DD, &small, 128), PARITY_ORACLE_DD);
  ck_assert_int_eq(parity_oracle_resolve_grads(PARITY_ORACLE_NONE, &small, 128), PARITY_ORACLE_NONE);
}
END_TEST

CKR_MAIN("grid gradient dry run", "dry", 0, builtin_policy_covers_gradient_entries,
    gradient_rows_without_a_rule_are_refused, bfloat16_gradient_entry_needs_its_rules, auto_counts_the_vjp_cost)
