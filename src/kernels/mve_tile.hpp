// Helium's inner loop of the packed products' tiles of 3, 2 and 1 rows by
// 8 columns (gemm.hpp's tile_pairs), scheduled by hand.
//
// As GCC 12 schedules gemm.hpp's loop it spends 14 instructions a k on 24
// multiply-adds: each a[i][k] a load of its own, a copy of the panel
// pointer and an add for each pointer. Here two k go in 19: the six
// a[i][k], a[i][k + 1] by three doubleword loads that step their rows
// (LDRD with writeback), the panel's four vectors by loads whose
// pre-indexed writeback steps the panel (VLDRW [Rn, #stride]!), and twelve
// VFMA with a core register (no broadcast). The 6 accumulators and the 2
// panel vectors are Q0-Q7. Each sum is the same chain of single-rounding
// multiply-adds over k as the C++ loop's: the same bits.
#ifndef EDGEATTN_KERNELS_MVE_TILE_HPP
#define EDGEATTN_KERNELS_MVE_TILE_HPP

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "mve_batch.hpp"

namespace edgeattn {
namespace detail {
namespace {

// One k of the tile's rows: b0, b1 = the panel's next row (the pointer
// stepped to it first), then each row's multiply-adds by its scalar x.
#define EDGEATTN_MVE_TILE_LOAD "vldrw.u32 %q[b0], [%[p], %[s]]!\n\tvldrw.u32 %q[b1], [%[p], #16]\n\t"
#define EDGEATTN_MVE_TILE_ROW(c0, c1, x) "vfma.f32 %q[" c0 "], %q[b0], %[" x "]\n\tvfma.f32 %q[" c1 "], %q[b1], %[" x "]\n\t"

template <size_t Stride>
EDGEATTN_WRAPPER bool tile_pairs(size_t pairs, const float *(&ap)[3], const float *&panel, mve_batch (&acc)[3][2],
                                 std::integral_constant<size_t, Stride>, batch_tag<mve_batch>) {
    float32x4_t c00 = acc[0][0], c01 = acc[0][1], c10 = acc[1][0], c11 = acc[1][1], c20 = acc[2][0],
                c21 = acc[2][1];
    const float *a0 = ap[0], *a1 = ap[1], *a2 = ap[2], *p = panel - Stride;
    for (; pairs; --pairs) {
        float32x4_t b0, b1;
        uint32_t x0, y0, x1, y1, x2, y2;
        __asm__("ldrd %[x0], %[y0], [%[a0]], #8\n\t"
                "ldrd %[x1], %[y1], [%[a1]], #8\n\t"
                "ldrd %[x2], %[y2], [%[a2]], #8\n\t"
                EDGEATTN_MVE_TILE_LOAD
                EDGEATTN_MVE_TILE_ROW("c00", "c01", "x0")
                EDGEATTN_MVE_TILE_ROW("c10", "c11", "x1")
                EDGEATTN_MVE_TILE_ROW("c20", "c21", "x2")
                EDGEATTN_MVE_TILE_LOAD
                EDGEATTN_MVE_TILE_ROW("c00", "c01", "y0")
                EDGEATTN_MVE_TILE_ROW("c10", "c11", "y1")
                EDGEATTN_MVE_TILE_ROW("c20", "c21", "y2")
                : [c00] "+w"(c00), [c01] "+w"(c01), [c10] "+w"(c10), [c11] "+w"(c11), [c20] "+w"(c20),
                  [c21] "+w"(c21), [b0] "=&w"(b0), [b1] "=&w"(b1), [x0] "=&r"(x0), [y0] "=&r"(y0),
                  [x1] "=&r"(x1), [y1] "=&r"(y1), [x2] "=&r"(x2), [y2] "=&r"(y2), [a0] "+r"(a0),
                  [a1] "+r"(a1), [a2] "+r"(a2), [p] "+r"(p)
                : [s] "n"(Stride * sizeof(float))
                : "memory");
    }
    acc[0][0] = c00, acc[0][1] = c01, acc[1][0] = c10, acc[1][1] = c11, acc[2][0] = c20, acc[2][1] = c21;
    ap[0] = a0, ap[1] = a1, ap[2] = a2, panel = p + Stride;
    return true;
}

template <size_t Stride>
EDGEATTN_WRAPPER bool tile_pairs(size_t pairs, const float *(&ap)[2], const float *&panel, mve_batch (&acc)[2][2],
                                 std::integral_constant<size_t, Stride>, batch_tag<mve_batch>) {
    float32x4_t c00 = acc[0][0], c01 = acc[0][1], c10 = acc[1][0], c11 = acc[1][1];
    const float *a0 = ap[0], *a1 = ap[1], *p = panel - Stride;
    for (; pairs; --pairs) {
        float32x4_t b0, b1;
        uint32_t x0, y0, x1, y1;
        __asm__("ldrd %[x0], %[y0], [%[a0]], #8\n\t"
                "ldrd %[x1], %[y1], [%[a1]], #8\n\t"
                EDGEATTN_MVE_TILE_LOAD
                EDGEATTN_MVE_TILE_ROW("c00", "c01", "x0")
                EDGEATTN_MVE_TILE_ROW("c10", "c11", "x1")
                EDGEATTN_MVE_TILE_LOAD
                EDGEATTN_MVE_TILE_ROW("c00", "c01", "y0")
                EDGEATTN_MVE_TILE_ROW("c10", "c11", "y1")
                : [c00] "+w"(c00), [c01] "+w"(c01), [c10] "+w"(c10), [c11] "+w"(c11), [b0] "=&w"(b0),
                  [b1] "=&w"(b1), [x0] "=&r"(x0), [y0] "=&r"(y0), [x1] "=&r"(x1), [y1] "=&r"(y1),
                  [a0] "+r"(a0), [a1] "+r"(a1), [p] "+r"(p)
                : [s] "n"(Stride * sizeof(float))
                : "memory");
    }
    acc[0][0] = c00, acc[0][1] = c01, acc[1][0] = c10, acc[1][1] = c11;
    ap[0] = a0, ap[1] = a1, panel = p + Stride;
    return true;
}

template <size_t Stride>
EDGEATTN_WRAPPER bool tile_pairs(size_t pairs, const float *(&ap)[1], const float *&panel, mve_batch (&acc)[1][2],
                                 std::integral_constant<size_t, Stride>, batch_tag<mve_batch>) {
    float32x4_t c00 = acc[0][0], c01 = acc[0][1];
    const float *a0 = ap[0], *p = panel - Stride;
    for (; pairs; --pairs) {
        float32x4_t b0, b1;
        uint32_t x0, y0;
        __asm__("ldrd %[x0], %[y0], [%[a0]], #8\n\t"
                EDGEATTN_MVE_TILE_LOAD
                EDGEATTN_MVE_TILE_ROW("c00", "c01", "x0")
                EDGEATTN_MVE_TILE_LOAD
                EDGEATTN_MVE_TILE_ROW("c00", "c01", "y0")
                : [c00] "+w"(c00), [c01] "+w"(c01), [b0] "=&w"(b0), [b1] "=&w"(b1), [x0] "=&r"(x0),
                  [y0] "=&r"(y0), [a0] "+r"(a0), [p] "+r"(p)
                : [s] "n"(Stride * sizeof(float))
                : "memory");
    }
    acc[0][0] = c00, acc[0][1] = c01;
    ap[0] = a0, panel = p + Stride;
    return true;
}

#undef EDGEATTN_MVE_TILE_LOAD
#undef EDGEATTN_MVE_TILE_ROW

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
