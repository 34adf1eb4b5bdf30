// impl "libtorch": PyTorch's C++ library (Debian's libtorch 1.13, CPU), in
// inference mode (torch::NoGradGuard), intra-op threads = bench_threads().
#include <torch/torch.h>

#include <cmath>

#include "common.hpp"
#include "torch_bench.hpp"

namespace ebench {
namespace {

void softmax(benchmark::State &state, SoftmaxShape s) {
    torch::NoGradGuard no_grad;
    const int64_t rows = static_cast<int64_t>(s.rows), cols = static_cast<int64_t>(s.cols);
    torch::Tensor X = random_tensor({rows, cols}, 1, 4.0f), Y = torch::empty({rows, cols});
    for (auto _ : state) {
        at::_softmax_out(Y, X, 1, false);
        benchmark::DoNotOptimize(Y.data_ptr<float>());
        benchmark::ClobberMemory();
    }
    set_bytes(state, 2.0 * sizeof(float) * s.rows * s.cols);
}

// d2l's masked_softmax: sequence_mask (arange < valid_len, masked_fill with
// -1e6), then softmax over the last axis. Every row has valid length cols/4.
void softmax_masked(benchmark::State &state, SoftmaxShape s) {
    torch::NoGradGuard no_grad;
    const int64_t rows = static_cast<int64_t>(s.rows), cols = static_cast<int64_t>(s.cols);
    torch::Tensor X = random_tensor({rows, cols}, 1, 4.0f);
    torch::Tensor valid_lens = torch::full({rows}, cols / 4, torch::kInt32);
    for (auto _ : state) {
        torch::Tensor mask = torch::arange(cols, torch::kInt32).unsqueeze(0) < valid_lens.unsqueeze(1);
        torch::Tensor Y = torch::softmax(X.masked_fill(mask.logical_not(), -1e6), -1);
        benchmark::DoNotOptimize(Y.data_ptr<float>());
        benchmark::ClobberMemory();
    }
    set_bytes(state, 2.0 * sizeof(float) * s.rows * s.cols);
}

// batch*heads attentions of seq x seq, d = d_model / heads, no mask.
// Without weights: torch's own entry point, at::_scaled_dot_product_attention
// (1.13, need_attn_weights = false). With weights: d2l's
// DotProductAttention, bmm + softmax + bmm.
void sdpa(benchmark::State &state, AttentionShape s, bool weights) {
    torch::NoGradGuard no_grad;
    const int64_t BH = static_cast<int64_t>(s.batch * s.heads), n = static_cast<int64_t>(s.seq),
                  d = static_cast<int64_t>(s.head_dim());
    torch::Tensor Q = random_tensor({BH, n, d}, 2), K = random_tensor({BH, n, d}, 3),
                  V = random_tensor({BH, n, d}, 4);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    for (auto _ : state) {
        if (weights) {
            torch::Tensor A = torch::softmax(torch::bmm(Q, K.transpose(1, 2)) * scale, -1);
            torch::Tensor O = torch::bmm(A, V);
            benchmark::DoNotOptimize(O.data_ptr<float>());
            benchmark::DoNotOptimize(A.data_ptr<float>());
        } else {
            torch::Tensor O = std::get<0>(at::_scaled_dot_product_attention(Q, K, V, {}, 0.0, false, false));
            benchmark::DoNotOptimize(O.data_ptr<float>());
        }
        benchmark::ClobberMemory();
    }
    set_flops(state, sdpa_flops(s));
}

// torch::nn::MultiheadAttention(d_model, heads), no biases, self-attention
// (query = key = value = X, so torch projects q, k, v with one fused GEMM).
// The C++ module of 1.13 has no batch_first: X is stored (seq, batch,
// d_model) beforehand, outside the timing. With weights: need_weights and
// per-head weights (average_attn_weights = false), as d2l returns them.
void mha(benchmark::State &state, AttentionShape s, bool weights) {
    torch::NoGradGuard no_grad;
    const int64_t B = static_cast<int64_t>(s.batch), n = static_cast<int64_t>(s.seq),
                  d = static_cast<int64_t>(s.d_model), H = static_cast<int64_t>(s.heads);
    torch::nn::MultiheadAttention attn = torch_mha(d, H);
    torch::Tensor X = random_tensor({B, n, d}, 5).transpose(0, 1).contiguous();  // (n, B, d)
    for (auto _ : state) {
        auto out = attn->forward(X, X, X, {}, weights, {}, /*average_attn_weights=*/false);
        benchmark::DoNotOptimize(std::get<0>(out).data_ptr<float>());
        benchmark::ClobberMemory();
    }
    set_flops(state, mha_flops(s));
}

// y = x W^T into a preallocated output.
void gemm(benchmark::State &state, GemmShape s) {
    torch::NoGradGuard no_grad;
    const int64_t M = static_cast<int64_t>(s.M), N = static_cast<int64_t>(s.N),
                  K = static_cast<int64_t>(s.K);
    torch::Tensor A = random_tensor({M, K}, 10), W = random_tensor({N, K}, 11), C = torch::empty({M, N});
    for (auto _ : state) {
        at::mm_out(C, A, W.t());
        benchmark::DoNotOptimize(C.data_ptr<float>());
        benchmark::ClobberMemory();
    }
    set_flops(state, 2.0 * s.M * s.N * s.K);
}

// Y = X + P[:n], broadcast over the batch, into a preallocated output.
void posenc(benchmark::State &state, PosencShape s) {
    torch::NoGradGuard no_grad;
    const int64_t B = static_cast<int64_t>(s.batch), n = static_cast<int64_t>(s.n),
                  d = static_cast<int64_t>(s.d);
    torch::Tensor X = random_tensor({B, n, d}, 12), P = random_tensor({n, d}, 13), Y = torch::empty({B, n, d});
    for (auto _ : state) {
        at::add_out(Y, X, P);
        benchmark::DoNotOptimize(Y.data_ptr<float>());
        benchmark::ClobberMemory();
    }
    set_bytes(state, 2.0 * sizeof(float) * s.batch * s.n * s.d);
}

}  // namespace

void register_benchmarks() {
    at::set_num_threads(bench_threads());
    benchmark::AddCustomContext("torch_threads", std::to_string(at::get_num_threads()));
    for (const auto &s : softmax_shapes) {
        configure(benchmark::RegisterBenchmark(name("softmax", "libtorch", s).c_str(), softmax, s));
        configure(benchmark::RegisterBenchmark(name("softmax_masked", "libtorch", s).c_str(), softmax_masked, s));
    }
    for (const auto &s : attention_shapes) {
        configure(benchmark::RegisterBenchmark(name("sdpa", "libtorch", s).c_str(), sdpa, s, false));
        configure(benchmark::RegisterBenchmark(name("sdpa_weights", "libtorch", s).c_str(), sdpa, s, true));
        configure(benchmark::RegisterBenchmark(name("mha", "libtorch", s).c_str(), mha, s, false));
        configure(benchmark::RegisterBenchmark(name("mha_weights", "libtorch", s).c_str(), mha, s, true));
    }
    for (const auto &s : gemm_shapes)
        configure(benchmark::RegisterBenchmark(name("gemm", "libtorch", s).c_str(), gemm, s));
    for (const auto &s : posenc_shapes)
        configure(benchmark::RegisterBenchmark(name("posenc", "libtorch", s).c_str(), posenc, s));
}

}  // namespace ebench
