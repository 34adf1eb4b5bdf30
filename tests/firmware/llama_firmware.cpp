// The tiny Llama-style model of examples/llama on the Cortex-M4F
// (ports/cortex-m4f.cmake): its int8 weights (examples/llama/tiny_llama_int8.h)
// are const arrays in flash, every buffer is static RAM of a fixed size, and
// it decodes a stream longer than its window cache (the ring wraps) on both
// attention paths of llama_decode.c, checking every token and logit against
// PyTorch's float64 answer in the header. It reports its footprint: the
// image's flash and static RAM (from the linker script's symbols), the
// model's and the decoder's share of them, and the stack the decode used
// (the stack below main's frame is painted first).
#include <cstddef>
#include <cstdint>

#include "llama_decode.h"
#include "report.hpp"

extern "C" std::uint32_t __data_load__[], __data_start__[], __data_end__[], __bss_end__[];

namespace {

constexpr std::size_t stack_probe_words = 4096;  // 16 KiB below main's frame
constexpr std::uint32_t stack_paint = 0x5AC5AC5Au;

std::uint32_t *stack_pointer() {
    std::uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    return sp;
}

std::size_t bytes_between(const void *from, const void *to) {
    return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(to) - reinterpret_cast<std::uintptr_t>(from));
}

}  // namespace

int main() {
    int failed = 0;
    std::size_t deepest_stack = 0;
    llama_result r{};
    const llama_path paths[] = {LLAMA_FUSED, LLAMA_PROJECTION_FREE};
    for (const llama_path path : paths) {
        volatile std::uint32_t *const top = stack_pointer() - 64, *const bottom = top - stack_probe_words;
        for (volatile std::uint32_t *p = bottom; p < top; ++p) *p = stack_paint;
        const int bad = llama_decode(path, &r);
        volatile std::uint32_t *deepest = bottom;
        while (deepest < top && *deepest == stack_paint) ++deepest;
        if (deepest == bottom) failed = 1;  // deeper than the probe: not measured
        const std::size_t stack = static_cast<std::size_t>(top - deepest) * 4;
        if (stack > deepest_stack) deepest_stack = stack;
        {
            firmware::Line line;
            line << "llama " << llama_path_name(path) << ": window " << r.window << " + " << r.sinks << " sinks, "
                 << r.positions << " positions; tokens";
            for (std::size_t i = 0; i < r.generated; ++i) line << " " << static_cast<int>(r.tokens[i]);
        }
        firmware::Line() << "  logits: max abs error " << r.max_abs_error << ", " << r.max_abs_error / r.logit_scale
                         << " of the largest |logit| (tolerance " << LLAMA_LOGIT_TOLERANCE << "); status "
                         << static_cast<int>(r.status) << ", first mismatch " << r.first_mismatch << " of "
                         << r.steps << (bad ? ": FAILED" : ": ok");
        failed |= bad;
    }
    const std::size_t flash = bytes_between(nullptr, __data_load__) + bytes_between(__data_start__, __data_end__);
    firmware::Line() << "llama footprint: flash " << flash << " B (model weights " << r.weight_bytes
                     << " B), static RAM " << bytes_between(__data_start__, __bss_end__) << " B (decoder "
                     << r.static_ram_bytes << " B: " << r.cache_capacity << "-row KV caches of " << r.cache_bytes
                     << " B a layer, workspace for " << r.workspace_bytes << " B), stack " << deepest_stack << " B";
    return failed;
}
