// Helium loops scheduled by hand: the packed products' tiles of 3, 2 and
// 1 rows by 8 columns (gemm.hpp's tile_pairs), and a decode step's scores
// and weighted sum for heads of 16 (decode.hpp's small_head_scores,
// value_row_pairs).
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
#ifndef EDGEATTN_KERNELS_MVE_ASM_HPP
#define EDGEATTN_KERNELS_MVE_ASM_HPP

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

// One key of a head of 16 against the query in Q0-Q3: its sum in Q4 (from
// +0, the query's batches in order, as decode_scores_one_row), stored in
// the block's row `u`; the key pointer then steps one row.
#define EDGEATTN_MVE_SCORE_KEY(u)                                                                            \
    "veor q4, q4, q4\n\tvldrw.u32 q5, [%[k]]\n\tvfma.f32 q4, q0, q5\n\tvldrw.u32 q5, [%[k], #16]\n\t" \
    "vfma.f32 q4, q1, q5\n\tvldrw.u32 q5, [%[k], #32]\n\tvfma.f32 q4, q2, q5\n\t"                    \
    "vldrw.u32 q5, [%[k], #48]\n\tvfma.f32 q4, q3, q5\n\tadd %[k], %[k], %[step]\n\t"                 \
    "vstrw.32 q4, [%[b], #" #u "]\n\t"

// c[j] = alpha * (a . key j) for the whole groups of 4 of N keys of 16
// floats (keys ldw floats apart): the query held in Q0-Q3 for all of them,
// each key's sum through a 4 x 4 block on the stack, and each group's four
// reduced by one deinterleaving load (VLD4) and three adds, lane_sums'
// order. 49 instructions a group where decode_scores_one_row, reloading the
// query and setting each group up anew, took 70. Returns the keys done.
inline size_t small_head_scores(size_t N, size_t K, float alpha, const float *a, const float *Wm, size_t ldw,
                                float *c, batch_tag<mve_batch>) {
    if (K != 16 || N < 4) return 0;
    register float32x4_t q0 __asm__("q0") = vld1q_f32(a);
    register float32x4_t q1 __asm__("q1") = vld1q_f32(a + 4);
    register float32x4_t q2 __asm__("q2") = vld1q_f32(a + 8);
    register float32x4_t q3 __asm__("q3") = vld1q_f32(a + 12);
    alignas(16) float block[16];
    const float *k = Wm;
    const size_t step = ldw * sizeof(float), groups = N / 4;
    for (size_t g = groups; g; --g) {
        // volatile: its outputs are memory (c, the block), not operands.
        __asm__ volatile(EDGEATTN_MVE_SCORE_KEY(0) EDGEATTN_MVE_SCORE_KEY(16) EDGEATTN_MVE_SCORE_KEY(32)
                    EDGEATTN_MVE_SCORE_KEY(48)
                "vld40.32 {q4, q5, q6, q7}, [%[b]]\n\t"
                "vld41.32 {q4, q5, q6, q7}, [%[b]]\n\t"
                "vld42.32 {q4, q5, q6, q7}, [%[b]]\n\t"
                "vld43.32 {q4, q5, q6, q7}, [%[b]]\n\t"
                "vadd.f32 q4, q4, q6\n\t"
                "vadd.f32 q5, q5, q7\n\t"
                "vadd.f32 q4, q4, q5\n\t"
                "vmul.f32 q4, q4, %[alpha]\n\t"
                "vstrw.32 q4, [%[c]], #16"
                : [k] "+r"(k), [c] "+r"(c)
                : [b] "r"(block), [alpha] "r"(alpha), [step] "r"(step), "w"(q0), "w"(q1), "w"(q2), "w"(q3)
                : "q4", "q5", "q6", "q7", "memory");
    }
    return groups * 4;
}
#undef EDGEATTN_MVE_SCORE_KEY

// One value row times the core register x into Q accumulators c0-c3, the
// row pointer then stepped a row.
#define EDGEATTN_MVE_VALUE_ROW(x)                                                                             \
    "vldrw.u32 %q[b], [%[v]]\n\tvfma.f32 %q[c0], %q[b], %[" x "]\n\tvldrw.u32 %q[b], [%[v], #16]\n\t"     \
    "vfma.f32 %q[c1], %q[b], %[" x "]\n\tvldrw.u32 %q[b], [%[v], #32]\n\tvfma.f32 %q[c2], %q[b], %[" x "]\n\t" \
    "vldrw.u32 %q[b], [%[v], #48]\n\tvfma.f32 %q[c3], %q[b], %[" x "]\n\tadd %[v], %[v], %[step]\n\t"

// A decode step's weighted sum over a head of 16 values (decode.hpp's
// value_row_pairs): two rows a pass, their weights by one doubleword load,
// 19 instructions for 32 multiply-adds where GCC's loop took 12 for 16
// (a copy of the row pointer, a load of each weight).
inline bool value_row_pairs(size_t pairs, const float *&pj, const float *&row, size_t ldv, mve_batch (&acc)[5],
                            batch_tag<mve_batch>) {
    float32x4_t c0 = acc[0], c1 = acc[1], c2 = acc[2], c3 = acc[3];
    const float *p = pj, *v = row;
    const size_t step = ldv * sizeof(float);
    for (; pairs; --pairs) {
        float32x4_t b;
        uint32_t x, y;
        __asm__("ldrd %[x], %[y], [%[p]], #8\n\t" EDGEATTN_MVE_VALUE_ROW("x") EDGEATTN_MVE_VALUE_ROW("y")
                : [c0] "+w"(c0), [c1] "+w"(c1), [c2] "+w"(c2), [c3] "+w"(c3), [b] "=&w"(b), [x] "=&r"(x),
                  [y] "=&r"(y), [p] "+r"(p), [v] "+r"(v)
                : [step] "r"(step)
                : "memory");
    }
    acc[0] = c0, acc[1] = c1, acc[2] = c2, acc[3] = c3;
    pj = p, row = v;
    return true;
}
#undef EDGEATTN_MVE_VALUE_ROW

#undef EDGEATTN_MVE_TILE_LOAD
#undef EDGEATTN_MVE_TILE_ROW

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
