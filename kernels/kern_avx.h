/* kern_avx: whether the chunked kernels' template (kern_chunk_tmpl.h) uses
 * AVX.  With AVX it transposes K with vector shuffles and writes o with
 * streaming stores (data movement only: the values are the same), so the
 * scan and the affine prefix, which both instantiate it, must agree on it:
 * one definition here. */
#ifndef KERN_AVX_H
#define KERN_AVX_H

#if defined(__AVX__)
#include <immintrin.h>
#define KERN_AVX 1
#else
#define KERN_AVX 0
#endif

#endif
