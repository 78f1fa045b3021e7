/* report: the writers of the results document (docs/results-json.md).
 * Everything a report shows comes from the document; each writer validates
 * it first and writes its file atomically (gdn_atomic), so a failure leaves
 * nothing half-written and a failing run (pass = false) renders in full.
 */
#ifndef REPORT_H
#define REPORT_H

#include "report_doc.h"
#include "report_html.h"
#include "report_json.h"
#include "report_junit.h"
#include "report_markdown.h"

#endif
