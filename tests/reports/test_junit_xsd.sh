#!/bin/sh
# Validates the JUnit XML of the sample document with xmllint --schema
# (Debian: libxml2-utils).  Usage: test_junit_xsd.sh MAKE_SAMPLE JUNIT_XSD [AUDIT.json]
# (with an audit embedded: its gdn-parity.audit testsuite too)
set -eu
make_sample=$1
xsd=$2
audit=${3:-}
if ! command -v xmllint >/dev/null 2>&1; then
  echo "SKIP: xmllint not installed (apt-get install libxml2-utils)"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$make_sample" "$dir" ${audit:+"$audit"}
xmllint --noout --nonet --schema "$xsd" "$dir/junit.xml"
if [ -n "$audit" ] && ! grep -q '<testsuite name="gdn-parity.audit"' "$dir/junit.xml"; then
  echo "FAIL: the audit's testsuite is not in junit.xml"
  exit 1
fi
# The schema must also reject what it exists to reject: a testcase without
# its classname.
sed 's/ classname="[^"]*"//' "$dir/junit.xml" > "$dir/bad.xml"
if xmllint --noout --nonet --schema "$xsd" "$dir/bad.xml" 2>/dev/null; then
  echo "FAIL: junit.xsd accepted a testcase without classname"
  exit 1
fi
echo "junit.xml validates against junit.xsd; a testcase without classname does not"
