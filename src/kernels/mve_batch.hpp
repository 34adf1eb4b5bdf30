// Helium, the M-profile vector extension of Armv8.1-M (Cortex-M55, M85):
// a four-lane float batch with scalar_batch's and xsimd::batch's spelling
// of the operations the kernels use, on arm_mve.h's intrinsics. xsimd has
// no Helium architecture, so this is the batch type of the Helium path
// (src/arch/arm_helium.cpp), the only file that includes it.
//
// Where Helium differs from what the kernels assume, and what is done:
// - Its float maximum and minimum (VMAXNM/VMINNM) return the number when
//   one operand is NaN; the kernels' clamps must keep NaN (exp.hpp), so
//   max and min are a compare and a predicated select, as on x86
//   (maxps/minps: the second operand when either is NaN). Its compares
//   follow the Arm condition codes: LT and LE hold for unordered operands,
//   so every compare here is GT (false for NaN).
// - Its float arithmetic runs with the standard FPSCR value (QEMU, as the
//   architecture says): subnormal results flush to zero (exp's results
//   below FLT_MIN are 0, as exp.hpp documents) and a NaN result is the
//   default NaN (payloads are kept only by the binary16 conversions).
// - It has no vector division (softcap's, a few scales): lane by lane,
//   the FPU's own correctly rounded VDIV.
// - It has no float addition across lanes: the lanes are added in a fixed
//   order ((0 + 2) + (1 + 3)), the same for one batch and for groups
//   (reduce.hpp's sums_of_lanes through hadd).
// - Tails are predicated: VCTP makes the predicate of the first n lanes,
//   and the loads (zeroing) and stores under it touch nothing past n.
// - int8 and binary16 weights are widened by its widening loads (VLDRB.S32,
//   VLDRH.U32), then VCVT (int8) or integer operations (binary16, below).
#ifndef EDGEATTN_KERNELS_MVE_BATCH_HPP
#define EDGEATTN_KERNELS_MVE_BATCH_HPP

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <arm_mve.h>

#include "compact.hpp"
#include "reduce.hpp"
#include "widen.hpp"

#if !(defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2))
#error "mve_batch.hpp needs Helium with floating point (-mcpu=cortex-m55 or -march=armv8.1-m.main+mve.fp)"
#endif

namespace edgeattn {
namespace detail {
namespace {

// Four lanes' comparison results (a predicate: four bits a lane).
struct mve_lanes_true {
    mve_pred16_t bits;
};

struct mve_batch {
    static constexpr size_t size = 4;
    float32x4_t value;

    mve_batch() = default;
    mve_batch(float v) : value(vdupq_n_f32(v)) {}
    mve_batch(float32x4_t v) : value(v) {}
    operator float32x4_t() const { return value; }

    static mve_batch load_unaligned(const float *p) { return vld1q_f32(p); }
    static mve_batch load_aligned(const float *p) { return vld1q_f32(p); }
    void store_unaligned(float *p) const { vst1q_f32(p, value); }
    void store_aligned(float *p) const { vst1q_f32(p, value); }

    friend mve_batch operator+(mve_batch a, mve_batch b) { return vaddq_f32(a.value, b.value); }
    friend mve_batch operator-(mve_batch a, mve_batch b) { return vsubq_f32(a.value, b.value); }
    friend mve_batch operator*(mve_batch a, mve_batch b) { return vmulq_f32(a.value, b.value); }
    friend mve_batch operator/(mve_batch a, mve_batch b) {
        float32x4_t q = a.value;
        q = vsetq_lane_f32(vgetq_lane_f32(a.value, 0) / vgetq_lane_f32(b.value, 0), q, 0);
        q = vsetq_lane_f32(vgetq_lane_f32(a.value, 1) / vgetq_lane_f32(b.value, 1), q, 1);
        q = vsetq_lane_f32(vgetq_lane_f32(a.value, 2) / vgetq_lane_f32(b.value, 2), q, 2);
        q = vsetq_lane_f32(vgetq_lane_f32(a.value, 3) / vgetq_lane_f32(b.value, 3), q, 3);
        return q;
    }
    // a < b as b > a: Helium's VCMP with LT (and LE) is true for unordered
    // operands (the Arm condition codes), and a NaN must compare false.
    friend mve_lanes_true operator<(mve_batch a, mve_batch b) { return {vcmpgtq_f32(b.value, a.value)}; }
    friend mve_lanes_true operator>(mve_batch a, mve_batch b) { return {vcmpgtq_f32(a.value, b.value)}; }
    mve_batch &operator+=(mve_batch b) {
        value = vaddq_f32(value, b.value);
        return *this;
    }
};

// Q0-Q7: the kernels keep fewer batches side by side (reduce.hpp).
constexpr size_t vector_registers(batch_tag<mve_batch>) { return 8; }
// VLDRW and its widening forms take an immediate offset, no index register.
constexpr bool indexed_addressing(batch_tag<mve_batch>) { return false; }

// a * b + c, one rounding (VFMA).
inline mve_batch fma(mve_batch a, mve_batch b, mve_batch c) { return vfmaq_f32(c.value, a.value, b.value); }
// a * b + c, a in every lane: VFMA with a core register (reduce.hpp).
EDGEATTN_WRAPPER mve_batch fma_broadcast(float a, const mve_batch &b, const mve_batch &c) {
    return vfmaq_n_f32(c.value, b.value, a);
}
// a * c, c in every lane: VMUL with a core register.
EDGEATTN_WRAPPER mve_batch times_scalar(const mve_batch &a, float c) { return vmulq_n_f32(a.value, c); }
// a * b + c, c in every lane: VFMAS with a core register.
EDGEATTN_WRAPPER mve_batch fma_plus(const mve_batch &a, const mve_batch &b, float c) {
    return vfmasq_n_f32(a.value, b.value, c);
}
// b where either is NaN (see the top of the file): VCMP GT and VPSEL. As
// intrinsics, GCC 12 moved each predicate out of VPR, sign-extended it and
// moved it back (three instructions more a compare: softmax's clamps took
// 10 instructions where 4 do). "p0" is GCC's name for VPR.
EDGEATTN_WRAPPER mve_batch max(mve_batch a, mve_batch b) {
    float32x4_t r;
    __asm__("vcmp.f32 gt, %q1, %q2\n\tvpsel %q0, %q1, %q2" : "=w"(r) : "w"(a.value), "w"(b.value) : "p0");
    return r;
}
EDGEATTN_WRAPPER mve_batch min(mve_batch a, mve_batch b) {
    float32x4_t r;
    __asm__("vcmp.f32 gt, %q2, %q1\n\tvpsel %q0, %q1, %q2" : "=w"(r) : "w"(a.value), "w"(b.value) : "p0");
    return r;
}
inline mve_batch select(mve_lanes_true condition, mve_batch a, mve_batch b) {
    return vpselq_f32(a.value, b.value, condition.bits);
}
inline float hadd(mve_batch a) {
    return (vgetq_lane_f32(a.value, 0) + vgetq_lane_f32(a.value, 2)) +
           (vgetq_lane_f32(a.value, 1) + vgetq_lane_f32(a.value, 3));
}
// The reduce.hpp tree (lanes i and i + 2, then the two), in registers.
inline float horizontal_max(const mve_batch &v) {
    const float a = vgetq_lane_f32(v.value, 0), b = vgetq_lane_f32(v.value, 1);
    const float c = vgetq_lane_f32(v.value, 2), d = vgetq_lane_f32(v.value, 3);
    const float ac = c > a ? c : a, bd = d > b ? d : b;
    return bd > ac ? bd : ac;
}
// Lane i = v[i]'s lanes added in hadd's order (or their maximum in
// horizontal_max's): the four batches stored one after another and read
// back deinterleaved (VLD4) are their transpose, and three vector
// operations combine it. (VST4 then four loads did the same, but wants its
// four sources in consecutive registers: four moves more a tile.) Inlined,
// so the tiles' accumulators stay in registers (called through a pointer,
// GCC kept them on the stack and stored and reloaded every one each step
// of the products' loops).
EDGEATTN_WRAPPER void transpose_four(const mve_batch *v, mve_batch (&t)[4]) {
    // Unrolled at any optimisation level: a loop over v[i] (as -Os left
    // it) puts the caller's accumulators in memory for the whole product.
    alignas(16) float lanes[16];
    vst1q_f32(lanes, v[0].value);
    vst1q_f32(lanes + 4, v[1].value);
    vst1q_f32(lanes + 8, v[2].value);
    vst1q_f32(lanes + 12, v[3].value);
    const float32x4x4_t columns = vld4q_f32(lanes);
    t[0] = columns.val[0], t[1] = columns.val[1], t[2] = columns.val[2], t[3] = columns.val[3];
}
EDGEATTN_WRAPPER mve_batch sums_of_lanes(const mve_batch *v, batch_tag<mve_batch>) {
    mve_batch t[4];
    transpose_four(v, t);
    return (t[0] + t[2]) + (t[1] + t[3]);
}
EDGEATTN_WRAPPER mve_batch maxima_of_lanes(const mve_batch *v, batch_tag<mve_batch>) {
    mve_batch t[4];
    transpose_four(v, t);
    return max(max(t[3], t[1]), max(t[2], t[0]));
}
// Ties to even (VRINTN).
inline mve_batch round_to_nearest(mve_batch a) { return vrndnq_f32(a.value); }
// 2^n for a whole n in [-126, 127], from the exponent bits; VCVT turns a
// NaN into 0, so a NaN n gives 2^0 (as scalar_batch's).
inline mve_batch pow2n(mve_batch n) {
    const int32x4_t bits = vshlq_n_s32(vaddq_n_s32(vcvtq_s32_f32(n.value), 127), 23);
    return vreinterpretq_f32_s32(bits);
}
inline mve_batch times_pow2(mve_batch p, mve_batch n) { return p * pow2n(n); }
inline void keep_in_register(mve_batch &) {}

// n < 4 elements under the predicate of the first n lanes; the others `fill`.
inline mve_batch partial_load(const float *p, size_t n, float fill, batch_tag<mve_batch>) {
    const mve_pred16_t first = vctp32q(static_cast<uint32_t>(n));
    return vpselq_f32(vldrwq_z_f32(p, first), vdupq_n_f32(fill), first);
}
inline void partial_store(const mve_batch &v, float *p, size_t n, batch_tag<mve_batch>) {
    vstrwq_p_f32(p, v.value, vctp32q(static_cast<uint32_t>(n)));
}

inline mve_batch widen_int8(const int8_t *p, batch_tag<mve_batch>) { return vcvtq_f32_s32(vldrbq_s32(p)); }
// Four binary16 weights, widened by VLDRH.U32 and converted with integer
// operations, half_to_float's bits (half.hpp; NaN payloads kept): VCVTB
// (binary16 to binary32 in the bottom halves) would be one instruction,
// but QEMU 7.2, where the tests run, does not implement it. The magnitude's
// bits move to binary32's places and the exponent is rebased by 112; an
// exponent of 31 (inf, NaN) by 112 more, to 255; a zero or subnormal (m *
// 2^-24) becomes the normal 2^-14 * (1 + m * 2^-10), less 2^-14: exact.
inline mve_batch half_bits_to_float(uint32x4_t h) {
    // Constants as vectors: GCC 12 fails (internal error) on the _n_ forms
    // of these predicated adds and compares with such immediates.
    const uint32x4_t rebase = vdupq_n_u32(112u << 23), top = vdupq_n_u32(0x0F800000u);
    uint32x4_t bits = vshlq_n_u32(vandq_u32(h, vdupq_n_u32(0x7FFFu)), 13);
    const uint32x4_t exponent = vandq_u32(bits, top);
    bits = vaddq_u32(bits, rebase);
    bits = vaddq_m_u32(bits, bits, rebase, vcmpeqq_u32(exponent, top));
    const mve_pred16_t small = vcmpeqq_u32(exponent, vdupq_n_u32(0u));
    bits = vaddq_m_u32(bits, bits, vdupq_n_u32(1u << 23), small);
    float32x4_t magnitude = vreinterpretq_f32_u32(bits);
    magnitude = vsubq_m_f32(magnitude, magnitude, vdupq_n_f32(6.103515625e-05f), small);  // 2^-14
    const uint32x4_t sign = vshlq_n_u32(vandq_u32(h, vdupq_n_u32(0x8000u)), 16);
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(magnitude), sign));
}
inline mve_batch widen_half(const uint16_t *p, batch_tag<mve_batch>) { return half_bits_to_float(vldrhq_u32(p)); }

// n < 4 stored weights under the predicate of the first n lanes (the
// loads read nothing past n), the other lanes 0.
inline mve_batch partial_weights(const int8_t *p, size_t n, batch_tag<mve_batch>) {
    return vcvtq_f32_s32(vldrbq_z_s32(p, vctp32q(static_cast<uint32_t>(n))));
}
inline mve_batch partial_weights(const uint16_t *p, size_t n, batch_tag<mve_batch>) {
    return half_bits_to_float(vldrhq_z_u32(p, vctp32q(static_cast<uint32_t>(n))));
}

// Loads that step their pointer past what they read (writeback
// addressing), for the products' loops (weight_load.hpp's load_and_step):
// the intrinsics have no such form, and GCC 12 computes base + offset with
// an add per load instead. The widening loads' encoding has three bits for
// the base (a low register); the 32-bit load's has four.
EDGEATTN_WRAPPER mve_batch load_and_step(const float *&p, batch_tag<mve_batch>) {
    float32x4_t v;
    __asm__("vldrw.u32 %q0, [%1], #16" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const float(*)[4]>(p)));
    return v;
}
EDGEATTN_WRAPPER mve_batch load_and_step(const int8_t *&p, batch_tag<mve_batch>) {
    int32x4_t v;
    __asm__("vldrb.s32 %q0, [%1], #4" : "=w"(v), "+l"(p) : "m"(*reinterpret_cast<const int8_t(*)[4]>(p)));
    return vcvtq_f32_s32(v);
}
EDGEATTN_WRAPPER mve_batch load_and_step(const uint16_t *&p, batch_tag<mve_batch>) {
    uint32x4_t v;
    __asm__("vldrh.u32 %q0, [%1], #8" : "=w"(v), "+l"(p) : "m"(*reinterpret_cast<const uint16_t(*)[4]>(p)));
    return half_bits_to_float(v);
}

// No vector rounding to binary16 (VCVTB, as above): the caller rounds lane
// by lane (float_to_half_ieee).
inline bool narrow_half(const mve_batch &, uint16_t *) { return false; }

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
