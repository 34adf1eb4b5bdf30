// The stack a call uses on the board: the free stack below the caller's
// frame is painted (nothing else runs: no interrupts are enabled), the call
// runs, and the deepest word it overwrote is found. Shared by the footprint
// images and the whole-model firmware.
#ifndef EDGEATTN_FIRMWARE_STACK_PROBE_HPP
#define EDGEATTN_FIRMWARE_STACK_PROBE_HPP

#include <cstddef>
#include <cstdint>

namespace firmware {

constexpr std::size_t stack_probe_words = 4096;  // 16 KiB below the caller's frame
constexpr std::uint32_t stack_paint = 0x5AC5AC5Au;

inline std::uint32_t *stack_pointer() {
    std::uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    return sp;
}

// Bytes of stack `call` used, below `skip_words` words under the caller's
// frame (room for the call's own arguments); stack_probe_words * 4 when it
// went as deep as the probe (then deeper than measured).
template <class Call>
std::size_t stack_used(std::size_t skip_words, Call &&call) {
    volatile std::uint32_t *const top = stack_pointer() - skip_words, *const bottom = top - stack_probe_words;
    for (volatile std::uint32_t *p = bottom; p < top; ++p) *p = stack_paint;
    call();
    volatile std::uint32_t *deepest = bottom;
    while (deepest < top && *deepest == stack_paint) ++deepest;
    return static_cast<std::size_t>(top - deepest) * 4;
}

}  // namespace firmware

#endif
