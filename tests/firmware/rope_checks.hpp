// The RoPE checks of the test firmware (rope_checks.cpp).
#ifndef EDGEATTN_FIRMWARE_ROPE_CHECKS_HPP
#define EDGEATTN_FIRMWARE_ROPE_CHECKS_HPP

#include <cstddef>

namespace firmware {

// Runs them, one report line each; adds to passed / failed.
void run_rope_checks(std::size_t &passed, std::size_t &failed);

}  // namespace firmware

#endif
