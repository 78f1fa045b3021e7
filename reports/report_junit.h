/* report_junit: JUnit XML (--junit FILE) for CI test-result viewers.
 *
 * <testsuites> holds one <testsuite name="gdn-parity"> with tests, failures,
 * errors, skipped (always 0) and time attributes, and one <testcase> per case
 * in document order: name = the case id, classname = "gdn-parity." + the
 * input's name with every character outside [A-Za-z0-9_-] replaced by '_'
 * (CI viewers split classnames at dots into packages), time = cases[].seconds
 * (0 when absent, e.g. with --reproducible).  A failing case gets
 * <failure message="the deciding check: metric = value > limit" type="...">
 * whose body lists every check; a case with cases[].error gets <error>
 * instead.  Valid against the Jenkins/Ant-style schema in
 * tests/reports/junit.xsd.  Deterministic: no timestamp or hostname.
 * A document with an "audit" (--audit) gets a second <testsuite
 * name="gdn-parity.audit">, one testcase per audit check (report_audit.h);
 * the <testsuites> totals count both.
 */
#ifndef REPORT_JUNIT_H
#define REPORT_JUNIT_H

#include <jansson.h>

#include "gdn_error.h"
#include "report_buf.h"

int report_junit_render(const json_t *doc, report_buf *b, gdn_error *e);
int report_junit_write(const json_t *doc, const char *path, gdn_error *e);

#endif
