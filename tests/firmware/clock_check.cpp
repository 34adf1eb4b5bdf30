// The instruction clock of bench_mcu.cpp held to a loop of known length:
// 10,000 passes of a 10-instruction loop (8 NOPs, a subtract and a branch)
// must read 100,000 instructions, give or take the call and a tick's
// rounding, on this board (mps2-an386 or mps3-an547, whose SysTick clocks
// differ).
#include <cstddef>
#include <cstdint>

#include "instruction_clock.hpp"
#include "report.hpp"

namespace {

__attribute__((noinline)) void ten_instruction_loop(std::uint32_t passes) {
    __asm__ volatile(
        "1:\n\t"
        "nop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\t"
        "subs %0, %0, #1\n\t"
        "bne 1b\n"
        : "+r"(passes)
        :
        : "cc");
}

}  // namespace

int main() {
    firmware::systick_start();
    constexpr std::size_t want = 100000;
    const std::size_t got = firmware::instructions([] { ten_instruction_loop(10000); });
    // A tick is 31.25 or 40 instructions: the count is within a few of
    // them, plus the call's few instructions.
    const bool ok = got + 50 >= want && got <= want + 50;
    firmware::Line() << "clock: SysTick at " << static_cast<std::size_t>(EDGEATTN_FIRMWARE_SYSTICK_HZ)
                     << " Hz; a loop of " << want << " instructions reads " << got << (ok ? ": ok" : ": FAILED");
    return ok ? 0 : 1;
}
