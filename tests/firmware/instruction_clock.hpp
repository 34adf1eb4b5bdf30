// Guest instructions by SysTick under QEMU's `-icount shift=0`: virtual
// time advances one nanosecond per guest instruction, and SysTick counts
// the board's processor clock, which QEMU 7.2 runs at 25 MHz on mps2-an386
// (one tick per 40 instructions) and at 32 MHz on mps3-an547 (hw/arm/
// mps2-tz.c: one tick per 31.25). EDGEATTN_FIRMWARE_SYSTICK_HZ is the
// board's (tests/firmware/CMakeLists.txt); clock_check.cpp holds the
// method to a loop of known length on each board.
#ifndef EDGEATTN_FIRMWARE_INSTRUCTION_CLOCK_HPP
#define EDGEATTN_FIRMWARE_INSTRUCTION_CLOCK_HPP

#include <cstddef>
#include <cstdint>

#if !defined(EDGEATTN_FIRMWARE_SYSTICK_HZ)
#error "EDGEATTN_FIRMWARE_SYSTICK_HZ: the board's SysTick clock (tests/firmware/CMakeLists.txt)"
#endif

namespace firmware {

inline volatile std::uint32_t *systick() { return reinterpret_cast<volatile std::uint32_t *>(0xE000E010u); }

inline void systick_start() {
    systick()[0] = 0;            // CSR: off
    systick()[1] = 0x00FFFFFFu;  // RVR: the whole 24 bits
    systick()[2] = 0;            // CVR: reload
    systick()[0] = 5;            // CSR: on, processor clock, no interrupt
}

// Ticks of `rounds` calls of f (the counter counts down; one wrap at most:
// a call here runs far below 2^24 ticks).
template <class F>
std::uint32_t ticks_of(std::size_t rounds, F f) {
    const std::uint32_t t0 = systick()[2];
    for (std::size_t r = 0; r < rounds; ++r) {
        f();
        // Every round is done in full: the compiler may not merge the
        // rounds of an inlined loop that writes the same results.
        __asm__ volatile("" ::: "memory");
    }
    const std::uint32_t t1 = systick()[2];
    return (t0 - t1) & 0x00FFFFFFu;
}

constexpr std::size_t kRounds = 8;

// Instructions per call of f, less the loop's own (an empty call): ticks
// times 10^9 / the SysTick clock (one instruction a nanosecond), rounded.
template <class F>
std::size_t instructions(F f) {
    f();  // warm: the first call may take other paths (a cache's first fill)
    const std::uint32_t empty = ticks_of(kRounds, [] {});
    const std::uint32_t used = ticks_of(kRounds, f);
    const std::uint64_t net = used > empty ? used - empty : 0;
    const std::uint64_t per_rounds = std::uint64_t{EDGEATTN_FIRMWARE_SYSTICK_HZ} * kRounds;
    return static_cast<std::size_t>((net * 1000000000u + per_rounds / 2) / per_rounds);
}

}  // namespace firmware

#endif
