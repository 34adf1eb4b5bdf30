// A tiny fixed-seed generator for the demo's inputs and weights.
//
// Why not <random>: the engines are portable but the distributions
// (std::uniform_real_distribution) are not specified bit for bit, so the same
// seed prints different numbers with libstdc++, libc++ and MSVC. SplitMix64
// plus an exact int-to-float step gives the same floats everywhere.
#ifndef EDGEATTN_DEMO_PRNG_HPP
#define EDGEATTN_DEMO_PRNG_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace demo {

// SplitMix64 (Steele, Lea, Flood 2014): one 64-bit state, full period.
class SplitMix64 {
  public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

    // Uniform in [-bound, bound). The top 24 bits give an integer that a float
    // holds exactly, so s lies in [-1, 1) without rounding and the only
    // rounding is the one multiply by bound: identical on every IEEE-754
    // platform, whatever FMA contraction the compiler chooses.
    float symmetric(float bound) {
        const std::int32_t k = static_cast<std::int32_t>(next() >> 40);  // [0, 2^24)
        const float s = static_cast<float>(2 * k - (1 << 24)) * 0x1p-24f;  // [-1, 1)
        return bound * s;
    }

    void fill_symmetric(float *out, std::size_t count, float bound) {
        for (std::size_t i = 0; i < count; ++i) out[i] = symmetric(bound);
    }

  private:
    std::uint64_t state_;
};

// torch.nn.Linear(in_features, out_features).weight: kaiming_uniform_ with
// a = sqrt(5) reduces to U(-1/sqrt(in), 1/sqrt(in)); stored (out, in).
inline void init_like_torch_linear(SplitMix64 &rng, float *weight, std::size_t out_features,
                                   std::size_t in_features) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(in_features));
    rng.fill_symmetric(weight, out_features * in_features, bound);
}

}  // namespace demo

#endif
