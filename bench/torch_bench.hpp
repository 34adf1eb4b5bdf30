// What the libtorch programs (bench_libtorch.cpp, bench_decoder_libtorch.cpp)
// share: reproducible tensors and the torch::nn::MultiheadAttention they
// both time, with the weights edgeattn's programs use (same seeds).
#ifndef EDGEATTN_BENCH_TORCH_BENCH_HPP
#define EDGEATTN_BENCH_TORCH_BENCH_HPP

#include <torch/torch.h>

#include <cmath>

#include "common.hpp"

namespace ebench {

// A float tensor of the given shape with reproducible uniform values.
inline torch::Tensor random_tensor(at::IntArrayRef shape, unsigned seed, float scale = 1.0f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    Floats f = random_floats(static_cast<size_t>(n), seed, scale);
    return torch::from_blob(f.get(), shape, torch::kFloat32).clone();
}

// torch::nn::MultiheadAttention(d_model, heads), no biases, eval mode, with
// W_q, W_k, W_v (in_proj_weight) and W_o of seeds 6..9 scaled 1/sqrt(d).
inline torch::nn::MultiheadAttention torch_mha(int64_t d, int64_t heads) {
    const float wscale = 1.0f / std::sqrt(static_cast<float>(d));
    torch::nn::MultiheadAttention attn(torch::nn::MultiheadAttentionOptions(d, heads).bias(false));
    attn->eval();
    torch::NoGradGuard no_grad;
    attn->in_proj_weight.copy_(torch::cat({random_tensor({d, d}, 6, wscale), random_tensor({d, d}, 7, wscale),
                                           random_tensor({d, d}, 8, wscale)}));
    attn->out_proj->weight.copy_(random_tensor({d, d}, 9, wscale));
    return attn;
}

}  // namespace ebench

#endif
