/* kern_solve_xla: the xla-expander in-chunk solve (kern_solve_xla.h). */
#include "kern_solve_xla.h"

#define KERN_REAL 32
#include "kern_solve_xla_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_solve_xla_tmpl.h"
