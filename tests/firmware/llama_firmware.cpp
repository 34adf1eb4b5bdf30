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
#include "stack_probe.hpp"

extern "C" std::uint32_t __flash_start__[], __data_load__[], __data_start__[], __data_end__[], __bss_end__[];

namespace {

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
        int bad = 0;
        const std::size_t stack = firmware::stack_used(64, [&] { bad = llama_decode(path, &r); });
        if (stack == firmware::stack_probe_words * 4) failed = 1;  // deeper than the probe: not measured
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
    // Flash: from the FLASH region's start to the end of .data's initial
    // values (on the Cortex-M55 board the vector table lies apart, in ITCM).
    const std::size_t flash = bytes_between(__flash_start__, __data_load__) + bytes_between(__data_start__, __data_end__);
    firmware::Line() << "llama footprint: flash " << flash << " B (model weights " << r.weight_bytes
                     << " B), static RAM " << bytes_between(__data_start__, __bss_end__) << " B (decoder "
                     << r.static_ram_bytes << " B: " << r.cache_capacity << "-row KV caches of " << r.cache_bytes
                     << " B a layer, workspace for " << r.workspace_bytes << " B), stack " << deepest_stack << " B";
    return failed;
}
