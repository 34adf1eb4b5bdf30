// A one-node ONNX model written as protobuf bytes (onnx.proto's
// ModelProto), enough for ONNX Runtime's CreateSessionFromArray: the peers
// benchmark needs no Python, onnx package or model files.
#ifndef EDGEATTN_BENCH_PEERS_ONNX_MODEL_HPP
#define EDGEATTN_BENCH_PEERS_ONNX_MODEL_HPP

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace peers::onnx {

struct ValueInfo {
    std::string name;
    int elem_type;              // TensorProto.DataType: 1 float, 6 int32, 10 float16
    std::vector<int64_t> dims;  // empty: a scalar
};

struct Node {
    std::string op_type;
    std::string domain;  // "" (ai.onnx) or "com.microsoft"
    std::vector<std::string> inputs, outputs;  // "" skips an optional input
    std::vector<std::pair<std::string, int64_t>> int_attributes;
};

// ModelProto bytes of a graph holding `node`, its inputs and outputs
// declared with fixed shapes; opsets: (domain, version) pairs.
std::string model(const Node &node, const std::vector<ValueInfo> &inputs, const std::vector<ValueInfo> &outputs,
                  const std::vector<std::pair<std::string, int64_t>> &opsets, int64_t ir_version);

}  // namespace peers::onnx

#endif
