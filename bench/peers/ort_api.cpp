// dlopen() of libonnxruntime and its API table (see ort_api.hpp).
#include "ort_api.hpp"

#include <dlfcn.h>

#include <type_traits>

namespace peers::ort {

bool load(const std::string &path, Api *api, std::string *why) {
    void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        *why = std::string("onnxruntime: ") + dlerror();
        return false;
    }
    struct ApiBase {  // OrtApiBase
        const void *(*GetApi)(uint32_t version);
        const char *(*GetVersionString)();
    };
    auto get_base = reinterpret_cast<const ApiBase *(*)()>(dlsym(lib, "OrtGetApiBase"));
    const ApiBase *base = get_base ? get_base() : nullptr;
    const void *table = base ? base->GetApi(1) : nullptr;
    if (!table) {
        *why = "onnxruntime: no OrtGetApiBase, or GetApi(1) refused, in " + path;
        return false;
    }
    // The struct OrtApi is an array of function pointers: entry i at i.
    void *const *fn = static_cast<void *const *>(table);
    auto at = [&](auto *member, int index) { *member = reinterpret_cast<std::remove_pointer_t<decltype(member)>>(fn[index]); };
    at(&api->GetErrorMessage, 2);
    at(&api->CreateEnv, 3);
    at(&api->CreateSessionFromArray, 8);
    at(&api->Run, 9);
    at(&api->CreateSessionOptions, 10);
    at(&api->SetSessionExecutionMode, 13);
    at(&api->SetSessionGraphOptimizationLevel, 23);
    at(&api->SetIntraOpNumThreads, 24);
    at(&api->SetInterOpNumThreads, 25);
    at(&api->CreateTensorWithDataAsOrtValue, 49);
    at(&api->CreateCpuMemoryInfo, 69);
    at(&api->ReleaseStatus, 93);
    at(&api->ReleaseValue, 96);
    api->version = base->GetVersionString();
    // GetApi(1) is served by every 1.x; a 2.x may renumber the table
    if (api->version.compare(0, 2, "1.") != 0) {
        *why = "onnxruntime: version " + api->version + ": ort_api.hpp's table indices are ONNX Runtime 1.x's";
        return false;
    }
    return true;
}

bool start(const std::string &path, Runtime *rt, std::string *why) {
    if (!load(path, &rt->api, why)) return false;
    const Api &a = rt->api;
    auto ok = [&](Status *st, const char *what) {
        if (!st) return true;
        *why = std::string("onnxruntime: ") + what + ": " + a.GetErrorMessage(st);
        a.ReleaseStatus(st);
        return false;
    };
    return ok(a.CreateEnv(LOGGING_LEVEL_ERROR, "edgeattn-peers", &rt->env), "CreateEnv") &&
           ok(a.CreateSessionOptions(&rt->options), "CreateSessionOptions") &&
           ok(a.SetIntraOpNumThreads(rt->options, 1), "SetIntraOpNumThreads") &&
           ok(a.SetInterOpNumThreads(rt->options, 1), "SetInterOpNumThreads") &&
           ok(a.SetSessionExecutionMode(rt->options, EXECUTION_SEQUENTIAL), "SetSessionExecutionMode") &&
           ok(a.SetSessionGraphOptimizationLevel(rt->options, GRAPH_OPT_ENABLE_ALL), "SetSessionGraphOptimizationLevel") &&
           ok(a.CreateCpuMemoryInfo(ARENA_ALLOCATOR, MEM_TYPE_DEFAULT, &rt->cpu), "CreateCpuMemoryInfo");
}

}  // namespace peers::ort
