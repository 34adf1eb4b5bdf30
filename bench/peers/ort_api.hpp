// The few entries of ONNX Runtime's C API the peers benchmark calls, from
// a libonnxruntime.so opened with dlopen() (the one onnxruntime-node ships,
// fetched by bench/peers/fetch.sh), so no ONNX Runtime header or link step
// is needed.
//
// OrtGetApiBase() returns {GetApi(version), GetVersionString()}; GetApi
// returns a struct of function pointers whose order is ONNX Runtime's ABI:
// entries are only ever appended, and the first 102 ("Version 1", frozen
// since 1.0) hold every call used here. The indices below are counted in
// onnxruntime_c_api.h's struct OrtApi; load() asks for API version 1,
// which every release since 1.0 serves, and refuses a GetVersionString()
// that is not 1.x (tested: 1.30.0).
// Every output is checked against a float64 reference before timing.
#ifndef EDGEATTN_BENCH_PEERS_ORT_API_HPP
#define EDGEATTN_BENCH_PEERS_ORT_API_HPP

#include <cstddef>
#include <cstdint>
#include <string>

namespace peers::ort {

struct Status;
struct Env;
struct SessionOptions;
struct Session;
struct MemoryInfo;
struct Value;

// ONNXTensorElementDataType
enum elem : int { ELEM_FLOAT = 1, ELEM_INT32 = 6, ELEM_FLOAT16 = 10 };
constexpr int LOGGING_LEVEL_ERROR = 3;     // OrtLoggingLevel
constexpr int EXECUTION_SEQUENTIAL = 0;    // ExecutionMode
constexpr int GRAPH_OPT_ENABLE_ALL = 99;   // GraphOptimizationLevel
constexpr int ARENA_ALLOCATOR = 1;         // OrtAllocatorType
constexpr int MEM_TYPE_DEFAULT = 0;        // OrtMemType

struct Api {
    const char *(*GetErrorMessage)(const Status *);                                                     // 2
    Status *(*CreateEnv)(int level, const char *logid, Env **);                                         // 3
    Status *(*CreateSessionFromArray)(const Env *, const void *model, std::size_t bytes, const SessionOptions *,
                                      Session **);                                                      // 8
    Status *(*Run)(Session *, const void *run_options, const char *const *input_names,
                   const Value *const *inputs, std::size_t n_inputs, const char *const *output_names,
                   std::size_t n_outputs, Value **outputs);                                             // 9
    Status *(*CreateSessionOptions)(SessionOptions **);                                                 // 10
    Status *(*SetSessionExecutionMode)(SessionOptions *, int mode);                                     // 13
    Status *(*SetSessionGraphOptimizationLevel)(SessionOptions *, int level);                           // 23
    Status *(*SetIntraOpNumThreads)(SessionOptions *, int n);                                           // 24
    Status *(*SetInterOpNumThreads)(SessionOptions *, int n);                                           // 25
    Status *(*CreateTensorWithDataAsOrtValue)(const MemoryInfo *, void *data, std::size_t bytes,
                                              const int64_t *shape, std::size_t rank, int type, Value **); // 49
    Status *(*CreateCpuMemoryInfo)(int allocator_type, int mem_type, MemoryInfo **);                    // 69
    void (*ReleaseStatus)(Status *);                                                                    // 93
    void (*ReleaseValue)(Value *);                                                                      // 96

    std::string version;  // GetVersionString()
};

// Opens the library at `path` and fills api. False, with the reason in
// *why, when that fails.
bool load(const std::string &path, Api *api, std::string *why);

// What every session shares: the environment, options (one intra-op and
// one inter-op thread, sequential, every graph optimisation) and the CPU
// memory description of caller-owned tensors.
struct Runtime {
    Api api;
    Env *env = nullptr;
    SessionOptions *options = nullptr;
    MemoryInfo *cpu = nullptr;
};
bool start(const std::string &path, Runtime *rt, std::string *why);

}  // namespace peers::ort

#endif
