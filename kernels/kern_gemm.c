#include "kern_gemm.h"

#include <math.h>

#define KERN_REAL 32
#include "kern_gemm_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_gemm_tmpl.h"
#undef KERN_REAL
