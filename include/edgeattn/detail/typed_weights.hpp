// fp32 multi-head weights as typed ones (every matrix EDGEATTN_WEIGHTS_F32):
// the one conversion the library's fp32 entry points and the fixed-size C++
// modules share, so both run the typed code path.
#ifndef EDGEATTN_DETAIL_TYPED_WEIGHTS_HPP
#define EDGEATTN_DETAIL_TYPED_WEIGHTS_HPP

#include "edgeattn/edgeattn.h"

namespace edgeattn {
namespace detail {

constexpr edgeattn_mha_typed_weights as_typed(const edgeattn_mha_weights &w) {
    return {{EDGEATTN_WEIGHTS_F32, w.W_q, nullptr}, {EDGEATTN_WEIGHTS_F32, w.W_k, nullptr},
            {EDGEATTN_WEIGHTS_F32, w.W_v, nullptr}, {EDGEATTN_WEIGHTS_F32, w.W_o, nullptr},
            w.b_q, w.b_k, w.b_v, w.b_o};
}

}  // namespace detail
}  // namespace edgeattn

#endif
