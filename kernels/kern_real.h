/* kern_real: the compute type F of one instantiation of a kernel template.
 *
 * The float kernels are written once, in files named *_tmpl.h, and compiled
 * twice: once with KERN_REAL == 32 (F = float) and once with KERN_REAL == 64
 * (F = double).  A template file includes this header first; it has no
 * include guard on purpose: every inclusion re-defines the names below for
 * the current KERN_REAL.
 *
 *   kreal        F
 *   KR(name)     name_f32 / name_f64 (functions and types of the instantiation)
 *   KFMA         fmaf / fma: the only fused multiply-add (-ffp-contract=off)
 *   KEXP, KSQRT  expf / exp, sqrtf / sqrt (glibc; correctly rounded sqrt,
 *                exp within 1 ULP and deterministic on one machine)
 *   KC(x)        the literal x rounded once to F
 *   KERN_NR      micro-kernel width: two AVX2 vectors of F
 *   KTMPL        `static`, for a template helper one includer may not use
 *   KSIMD        before a loop whose iterations are independent elementwise
 *                operations (never a reduction): asks gcc to vectorise it
 *                (-O2's cheap cost model would not, for want of alias
 *                information); vectorising such a loop does not change a bit
 *                of its results
 */
#ifndef KERN_REAL
#error "define KERN_REAL to 32 or 64 before including kern_real.h"
#endif

#undef kreal
#undef KR
#undef KR_
#undef KFMA
#undef KEXP
#undef KSQRT
#undef KC
#undef KERN_NR

#undef KTMPL
#undef KSIMD
#define KSIMD _Pragma("omp simd")
#define KTMPL static __attribute__((unused))
#define KR_(name, suffix) name##suffix

#if KERN_REAL == 32
#define kreal float
#define KR(name) KR_(name, _f32)
#define KFMA fmaf
#define KEXP expf
#define KSQRT sqrtf
#define KC(x) ((float)(x))
#define KERN_NR 16
#elif KERN_REAL == 64
#define kreal double
#define KR(name) KR_(name, _f64)
#define KFMA fma
#define KEXP exp
#define KSQRT sqrt
#define KC(x) ((double)(x))
#define KERN_NR 8
#else
#error "KERN_REAL must be 32 or 64"
#endif
