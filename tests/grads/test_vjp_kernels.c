#include <check.h>
#include <stdlib.h>
#include "vjp_test_util.h"
int main(void) { return 0; }
