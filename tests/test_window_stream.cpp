// An endless stream through a window KV cache: 100,000 tokens through a
// ring of W = 256 after S = 4 sinks (fp32 weights projecting), each step's
// attend against the float64 reference over the rows the cache should
// hold (the sinks and the last W tokens, in stream order), kept
// incrementally so the whole run stays cheap. Long: CTest label `long`.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"
#include "path_helpers.hpp"
#include "window_cache_helpers.hpp"

#include <cmath>
#include <deque>
#include <vector>

using window_tests::layer;
using window_tests::project;

TEST_CASE("100,000 tokens through a window cache of 4 sinks and 256 rows match the float64 reference") {
    const std::size_t B = 1, d = 16, h = 16, H = 2, S = 4, W = 256, cap = S + W, tokens = 100000;
    const layer net(d, h, H, H, 4242);
    window_tests::window_cache cache(B, H, net.hs, S, W, EDGEATTN_DTYPE_F32);
    const edgeattn_weights w = net.weights();
    // Every step stores one token, but each 1000th stores three and attends
    // them causally.
    const edgeattn_attention_dims wide = net.dims(B, 3, cap);
    const edgeattn_workspace_request calls[2] = {test_calls::request(EDGEATTN_OP_KV_CACHE_STORE, wide, 3),
                                                 test_calls::request(EDGEATTN_OP_KV_CACHE_ATTEND, wide)};
    std::size_t ws_bytes = 0;
    REQUIRE(edgeattn_workspace_size(calls, 2, 1, &ws_bytes) == EDGEATTN_OK);
    std::vector<float> ws(ws_bytes / 4), out(3 * h);
    std::vector<std::vector<double>> sink_keys, sink_values;
    std::deque<std::vector<double>> window_keys, window_values;
    edgeattn_attention_options causal{};
    causal.mask.causal = 1;
    std::vector<float> x = test_paths::random_floats(4096 * d, 17);
    double worst = 0.0;
    std::size_t given = 0, failures = 0, step = 0;
    while (given < tokens) {
        const std::size_t T = step % 1000 == 999 ? 3 : 1;
        const float *xs = &x[(given * 7) % (4096 - 3) * d];  // rows of a fixed pool, shifted each step
        const edgeattn_attention_dims dims = net.dims(B, T, cap);
        REQUIRE(edgeattn_kv_cache_store(&cache.c, &dims, T, xs, xs, &w, nullptr, ws.data(), ws_bytes) == EDGEATTN_OK);
        for (std::size_t t = 0; t < T; ++t) {
            std::vector<double> k = project(net.Wk, net.bk, xs + t * d, d, h), v = project(net.Wv, net.bv, xs + t * d, d, h);
            if (given + t < S) {
                sink_keys.push_back(k);
                sink_values.push_back(v);
            } else {
                window_keys.push_back(k);
                window_values.push_back(v);
                if (window_keys.size() > W) {
                    window_keys.pop_front();
                    window_values.pop_front();
                }
            }
        }
        given += T;
        REQUIRE(edgeattn_kv_cache_attend(&cache.c, &dims, xs, &w, T > 1 ? &causal : nullptr, ws.data(), ws_bytes,
                                         out.data(), nullptr) == EDGEATTN_OK);
        // The reference over the held rows: sinks, then the window oldest first.
        const std::size_t L = sink_keys.size() + window_keys.size();
        std::vector<double> want(T * h);
        for (std::size_t i = 0; i < T; ++i) {
            const std::vector<double> q = project(net.Wq, net.bq, xs + i * d, d, h);
            std::vector<double> heads(h, 0.0), score(L);
            for (std::size_t n = 0; n < H; ++n) {
                double top = -INFINITY;
                for (std::size_t j = 0; j < L; ++j) {
                    const std::vector<double> &k = j < sink_keys.size() ? sink_keys[j] : window_keys[j - sink_keys.size()];
                    double s = 0;
                    for (std::size_t c = 0; c < net.hs; ++c) s += q[n * net.hs + c] * k[n * net.hs + c];
                    s /= std::sqrt(static_cast<double>(net.hs));
                    if (j > i + L - T) s = -1e6;  // causal, bottom-right
                    score[j] = s;
                    top = s > top ? s : top;
                }
                double sum = 0;
                for (std::size_t j = 0; j < L; ++j) sum += (score[j] = std::exp(score[j] - top));
                for (std::size_t j = 0; j < L; ++j) {
                    const std::vector<double> &v =
                        j < sink_values.size() ? sink_values[j] : window_values[j - sink_values.size()];
                    for (std::size_t c = 0; c < net.hs; ++c) heads[n * net.hs + c] += score[j] / sum * v[n * net.hs + c];
                }
            }
            for (std::size_t o = 0; o < h; ++o) {
                double s = net.bo[o];
                for (std::size_t c = 0; c < h; ++c) s += heads[c] * net.Wo[o * h + c];
                want[i * h + o] = s;
            }
        }
        const double err = test_paths::rel_l2(out.data(), want);
        worst = err > worst ? err : worst;
        if (!(err < 5e-5) && failures++ < 5) CHECK_MESSAGE(err < 5e-5, "token " << given << ": error " << err);
        ++step;
    }
    CHECK(failures == 0);
    CHECK(cache.c.positions[0] == static_cast<std::int32_t>(given));
    CHECK(cache.c.lengths[0] == static_cast<std::int32_t>(cap));
    MESSAGE("worst relative L2 error over " << given << " tokens: " << worst);
}
