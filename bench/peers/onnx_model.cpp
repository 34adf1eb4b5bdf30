// Protobuf wire format by hand: varints, and length-delimited fields
// (strings, sub-messages). Field numbers from onnx/onnx.proto.
#include "onnx_model.hpp"

namespace peers::onnx {
namespace {

void varint(std::string &out, uint64_t v) {
    while (v >= 0x80) {
        out += static_cast<char>((v & 0x7f) | 0x80);
        v >>= 7;
    }
    out += static_cast<char>(v);
}
void int_field(std::string &out, int field, int64_t v) {
    varint(out, static_cast<uint64_t>(field) << 3);  // wire type 0
    varint(out, static_cast<uint64_t>(v));
}
void bytes_field(std::string &out, int field, const std::string &bytes) {
    varint(out, static_cast<uint64_t>(field) << 3 | 2);  // wire type 2
    varint(out, bytes.size());
    out += bytes;
}

// ValueInfoProto {name = 1, type = 2 {tensor_type = 1 {elem_type = 1,
// shape = 2 {dim = 1 {dim_value = 1}}}}}
std::string value_info(const ValueInfo &v) {
    std::string shape;
    for (int64_t d : v.dims) {
        std::string dim;
        int_field(dim, 1, d);
        bytes_field(shape, 1, dim);
    }
    std::string tensor;
    int_field(tensor, 1, v.elem_type);
    bytes_field(tensor, 2, shape);
    std::string type;
    bytes_field(type, 1, tensor);
    std::string out;
    bytes_field(out, 1, v.name);
    bytes_field(out, 2, type);
    return out;
}

}  // namespace

std::string model(const Node &node, const std::vector<ValueInfo> &inputs, const std::vector<ValueInfo> &outputs,
                  const std::vector<std::pair<std::string, int64_t>> &opsets, int64_t ir_version) {
    // NodeProto {input = 1, output = 2, name = 3, op_type = 4, attribute = 5, domain = 7}
    std::string n;
    for (const auto &i : node.inputs) bytes_field(n, 1, i);
    for (const auto &o : node.outputs) bytes_field(n, 2, o);
    bytes_field(n, 3, "node");
    bytes_field(n, 4, node.op_type);
    for (const auto &a : node.int_attributes) {
        // AttributeProto {name = 1, i = 3, type = 20 (INT = 2)}
        std::string attr;
        bytes_field(attr, 1, a.first);
        int_field(attr, 3, a.second);
        int_field(attr, 20, 2);
        bytes_field(n, 5, attr);
    }
    if (!node.domain.empty()) bytes_field(n, 7, node.domain);
    // GraphProto {node = 1, name = 2, input = 11, output = 12}
    std::string g;
    bytes_field(g, 1, n);
    bytes_field(g, 2, "g");
    for (const auto &i : inputs) bytes_field(g, 11, value_info(i));
    for (const auto &o : outputs) bytes_field(g, 12, value_info(o));
    // ModelProto {ir_version = 1, producer_name = 2, graph = 7, opset_import = 8 {domain = 1, version = 2}}
    std::string m;
    int_field(m, 1, ir_version);
    bytes_field(m, 2, "edgeattn-peers");
    bytes_field(m, 7, g);
    for (const auto &o : opsets) {
        std::string op;
        if (!o.first.empty()) bytes_field(op, 1, o.first);
        int_field(op, 2, o.second);
        bytes_field(m, 8, op);
    }
    return m;
}

}  // namespace peers::onnx
