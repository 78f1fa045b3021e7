#include "kern_gemm.h"

#include <math.h>

/* The micro-kernel is written for AVX-512F and for AVX2 + FMA with
 * intrinsics, whichever the compiler targets (-march=native on this
 * project's machines), and in portable C otherwise (-Dnative=false).  All
 * perform the same correctly rounded operations in the same order
 * (kern_gemm.h); test_gemm checks whichever is built against the scalar
 * loop, and scripts/kern_hashes.sh compares builds bit for bit. */
#if defined(__AVX512F__)
#include <immintrin.h>
#define KERN_GEMM_ISA 512
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define KERN_GEMM_ISA 256
#else
#define KERN_GEMM_ISA 0
#endif

#include "kern_avx.h" /* kern_tr8_f32, for the pack of A */

#define KERN_REAL 32
#include "kern_gemm_tmpl.h"
#undef KERN_REAL
#define KERN_REAL 64
#include "kern_gemm_tmpl.h"
#undef KERN_REAL
