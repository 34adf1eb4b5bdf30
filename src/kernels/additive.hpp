// Additive attention scores of one query row, written once for any batch
// type: scores[j] = sum_h w_v[h] * tanh(query[h] + keys[j*ldk + h]), where
// query (h) and keys (K, h) are already projected by W_q and W_k.
#ifndef EDGEATTN_KERNELS_ADDITIVE_HPP
#define EDGEATTN_KERNELS_ADDITIVE_HPP

#include <math.h>
#include <stddef.h>

namespace edgeattn {
namespace detail {
namespace {

template <class B>
void additive_scores_row(const float *query, const float *keys, size_t num_keys, size_t ldk,
                         const float *w_v, size_t num_hiddens, float *scores) {
    for (size_t j = 0; j < num_keys; ++j) {
        const float *key = keys + j * ldk;
        B acc(0.0f);
        size_t h = 0;
        for (; h + B::size <= num_hiddens; h += B::size) {
            const B feature = tanh(B::load_unaligned(query + h) + B::load_unaligned(key + h));
            acc = fma(B::load_unaligned(w_v + h), feature, acc);
        }
        float sum = hadd(acc);
        for (; h < num_hiddens; ++h) sum += w_v[h] * tanhf(query[h] + key[h]);
        scores[j] = sum;
    }
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
