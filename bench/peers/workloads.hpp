// The rows of the peers benchmark (edgeattn beside ggml and ONNX Runtime):
// their shapes, inputs and float64 references, and the implementations each
// library gives of them. Heads of 64 features, 8 query heads, float32
// activations, one thread.
//
//   decode     one new token's 8 query heads over a cache of L positions,
//              kv heads 8 or 2 (grouped-query: query head j reads kv head
//              j / (8 / kv)); K, V stored as fp32, fp16 or int8
//   attention  8 heads of S queries over S keys, causal (prefill) or not
//              (encoder)
//   softmax    softmax over the rows of an (R, C) matrix
//
// Canonical layouts, the same for every library and the reference: decode
// Q (8, 64), K and V (kv, L, 64), output (8, 64); attention Q, K, V and
// output (8, S, 64); softmax X and Y (R, C).
#ifndef EDGEATTN_BENCH_PEERS_WORKLOADS_HPP
#define EDGEATTN_BENCH_PEERS_WORKLOADS_HPP

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace peers {

constexpr std::size_t kHeads = 8, kHeadDim = 64;

enum class Kind { decode, attention, softmax };
// How K and V are stored (softmax: fp32 only). int8 is edgeattn's int8
// (one scale per cached row) and ggml's q8_0 (one scale per 32 values).
enum class Dtype { f32, f16, int8 };
const char *dtype_name(Dtype t);

using Floats = std::shared_ptr<float>;  // 64-byte aligned
Floats make_floats(std::size_t n);

struct Shape {
    Kind kind;
    std::size_t a, b;  // decode: L, kv heads; attention: S, causal (0/1); softmax: R, C
    std::string id() const;     // "decode/L4096/kv2", "attention/S512/causal", "softmax/4096x128"
    std::string label() const;  // the table's words
};

struct Inputs {
    Shape shape;
    Floats q, k, v, x;        // as the layouts above (x: softmax)
    std::size_t out_n = 0;    // floats of the output
    std::vector<double> ref;  // float64 reference, out_n values
};
Inputs make_inputs(const Shape &shape);

// One library's implementation of one row. call() is what is timed;
// output() returns its result in the canonical layout, after a call.
struct Impl {
    std::string library;  // "edgeattn", "ggml", "onnxruntime"
    Dtype dtype;
    std::string what;     // the API it calls, for the table's notes
    std::function<void()> call;
    std::function<std::vector<float>()> output;
    double kv_bytes = 0;  // decode: bytes of K and V one call reads
};

void add_edgeattn(const Inputs &in, std::vector<Impl> *impls);

// Decode rows: "read bound", a plain sum over the fp32 K and V (no output
// to check), the bandwidth a call that only reads them could reach.
void add_read_bound(const Inputs &in, std::vector<Impl> *impls);

namespace ggml {
struct Api;
struct backend;
}  // namespace ggml
// ggml's flash_attn_ext and soft_max_ext on a one-thread CPU backend.
void add_ggml(const ggml::Api &api, ggml::backend *cpu, const Inputs &in, std::vector<Impl> *impls);

namespace ort {
struct Runtime;
}
// ONNX Runtime sessions of one-node models, one thread.
void add_ort(ort::Runtime &rt, const Inputs &in, std::vector<Impl> *impls);

}  // namespace peers

#endif
