#include <check.h>
#include <stdint.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_inputs.h"
#include "gdn_outputs.h"
#include "../check_runner.h"

START_TEST(alignment_and_zero) {
  gdn_error e;
  gdn_error_init(&e);
  unsigned char *p = gdn_calloc(1000, 3, "test", &e);
  ck_assert_ptr_nonnull(p);
  ck_assert_uint_eq((uintptr_t)p % 64, 0);
  for (int i = 0; i < 3000; i++) ck_assert_uint_eq(p[i], 0);
  gdn_free(p);
}
END_TEST

START_TEST(overflow_refused) {
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_ptr_null(gdn_calloc(SIZE_MAX / 2, 4, "huge", &e));
  ck_assert_int_eq(e.code, GDN_ERR_NOMEM);
  ck_assert_ptr_nonnull(strstr(e.msg, "overflow"));
  ck_assert_ptr_null(gdn_malloc(SIZE_MAX - 3, "huge2", &e));
  ck_assert_ptr_nonnull(strstr(e.msg, "huge2"));
}
END_TEST

/* Every allocation of gdn_inputs_alloc and gdn_outputs_alloc in turn fails;
 * each must report NOMEM naming the tensor and leave the object cleared. */
START_TEST(injected_failures_leave_objects_clear) {
  gdn_shape s = {1, 5, 1, 2, 3, 4};
  for (long n = 1; n <= 6; n++) {
    gdn_error e;
    gdn_error_init(&e);
    gdn_inputs in;
    gdn_inputs_init(&in);
    gdn_alloc_fail_after(n);
    int rc = gdn_inputs_alloc(&in, &s, 1, &e);
    gdn_alloc_fail_after(0);
    ck_assert_int_eq(rc, GDN_ERR_NOMEM);
    ck_assert_ptr_nonnull(strstr(e.msg, "input"));
    ck_assert_ptr_null(in.q);
    ck_assert_ptr_null(in.h0);
    gdn_inputs_clear(&in);
  }
  for (long n = 1; n <= 2; n++) {
    gdn_error e;
    gdn_error_init(&e);
    gdn_outputs out;
    gdn_outputs_init(&out);
    gdn_alloc_fail_after(n);
    int rc = gdn_outputs_alloc(&out, &s, GDN_DTYPE_F32, &e);
    gdn_alloc_fail_after(0);
    ck_assert_int_eq(rc, GDN_ERR_NOMEM);
    ck_assert_ptr_null(out.o);
    gdn_outputs_clear(&out);
  }
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs in;
  gdn_inputs_init(&in);
  ck_assert_int_eq(gdn_inputs_alloc(&in, &s, 1, &e), GDN_OK);
  gdn_inputs_clear(&in);
  gdn_inputs_clear(&in); /* clear twice is safe */
}
END_TEST

START_TEST(error_helpers) {
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_error_set(&e, GDN_ERR_INPUT, "bad %d", 7), GDN_ERR_INPUT);
  gdn_error_prefix(&e, "reading %s: ", "x.h5");
  ck_assert_str_eq(e.msg, "reading x.h5: bad 7");
  ck_assert_int_eq(gdn_error_exit_status(GDN_ERR_INPUT), 2);
  ck_assert_int_eq(gdn_error_exit_status(GDN_ERR_NOMEM), 3);
  ck_assert_int_eq(gdn_error_exit_status(GDN_ERR_IO), 3);
  ck_assert_int_eq(gdn_error_exit_status(GDN_OK), 0);
  ck_assert_int_eq(gdn_error_set(NULL, GDN_ERR_INTERNAL, "x"), GDN_ERR_INTERNAL);
}
END_TEST

CKR_MAIN("alloc", "alloc", 0, alignment_and_zero, overflow_refused, injected_failures_leave_objects_clear,
    error_helpers)
