// Additive attention scores of one query row, written once for any batch
// type: scores[j] = sum_h w_v[h] * tanh(query[h] + keys[j*ldk + h]), where
// query (h) and keys (K, h) are already projected by W_q and W_k. tanh is
// xsimd's vector tanh on its paths, and elsewhere (Helium, the plain C++
// path) softcap.hpp's, made of exp's polynomial (at most 5 ULP): libm's
// tanhf lane by lane cost Helium 4 calls a batch and the plain C++ path
// one an element (d2l's additive example on the Cortex-M55: 160 calls,
// most of the op), and brought tanhf and expm1f into the image.
#ifndef EDGEATTN_KERNELS_ADDITIVE_HPP
#define EDGEATTN_KERNELS_ADDITIVE_HPP

#include <stddef.h>

#include "softcap.hpp"

namespace edgeattn {
namespace detail {
namespace {

// tanh of a batch of features: softcap.hpp's, from exp's polynomial; a
// batch type with a vector tanh of its own overloads this for its tag
// (xsimd_batch.hpp).
template <class B>
B feature_tanh(const B &x, batch_tag<B>) {
    return tanh_of_exp(x);
}

template <class B>
void additive_scores_row(const float *query, const float *keys, size_t num_keys, size_t ldk,
                         const float *w_v, size_t num_hiddens, float *scores) {
    const size_t full = num_hiddens / B::size * B::size, tail = num_hiddens - full;
    for (size_t j = 0; j < num_keys; ++j) {
        const float *key = keys + j * ldk;
        B acc(0.0f);
        for (size_t h = 0; h < full; h += B::size) {
            const B feature = feature_tanh(B::load_unaligned(query + h) + B::load_unaligned(key + h), batch_tag<B>());
            acc = fma(B::load_unaligned(w_v + h), feature, acc);
        }
        if (tail) {  // the lanes past num_hiddens weigh 0
            const B feature =
                feature_tanh(load_partial<B>(query + full, tail, 0.0f) + load_partial<B>(key + full, tail, 0.0f),
                             batch_tag<B>());
            acc = fma(load_partial<B>(w_v + full, tail, 0.0f), feature, acc);
        }
        scores[j] = hadd(acc);
    }
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
