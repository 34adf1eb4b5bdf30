// dlopen()/dlsym() of ggml's prebuilt libraries (see ggml_api.hpp).
#include "ggml_api.hpp"

#include <dirent.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace peers::ggml {
namespace {

template <class F>
bool sym(void *lib, const char *name, F *out, std::string *why) {
    *out = reinterpret_cast<F>(dlsym(lib, name));
    if (!*out) *why = std::string("ggml: no symbol ") + name;
    return *out != nullptr;
}

// The libggml-cpu-*.so in dir with the highest ggml_backend_score() (0:
// this CPU cannot run it), as ggml_backend_load_best() chooses.
std::string best_variant(const std::string &dir) {
    DIR *d = opendir(dir.c_str());
    if (!d) return "";
    std::string best;
    int best_score = 0;
    while (dirent *e = readdir(d)) {
        const std::string f = e->d_name;
        if (f.rfind("libggml-cpu-", 0) != 0 || f.size() < 15 || f.compare(f.size() - 3, 3, ".so") != 0) continue;
        void *h = dlopen((dir + "/" + f).c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h) continue;
        auto score = reinterpret_cast<int (*)()>(dlsym(h, "ggml_backend_score"));
        const int s = score ? score() : 0;
        if (s > best_score) {
            best_score = s;
            best = f.substr(12, f.size() - 15);
        }
        dlclose(h);
    }
    closedir(d);
    return best;
}

}  // namespace

bool load(const std::string &dir, const std::string &variant, Api *api, std::string *why) {
    // RTLD_GLOBAL: the CPU library's DT_NEEDED libggml-base.so is this one
    void *base = dlopen((dir + "/libggml-base.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!base) {
        *why = std::string("ggml: ") + dlerror();
        return false;
    }
    const std::string v = variant.empty() ? best_variant(dir) : variant;
    if (v.empty()) {
        *why = "ggml: no libggml-cpu-*.so in " + dir + " runs on this CPU";
        return false;
    }
    void *cpu = dlopen((dir + "/libggml-cpu-" + v + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!cpu) {
        *why = std::string("ggml: ") + dlerror();
        return false;
    }
    api->variant = v;
    const bool ok = sym(base, "ggml_version", &api->version, why) && sym(base, "ggml_commit", &api->commit, why) &&
                    sym(base, "ggml_init", &api->init, why) && sym(base, "ggml_free", &api->free, why) &&
                    sym(base, "ggml_tensor_overhead", &api->tensor_overhead, why) &&
                    sym(base, "ggml_graph_overhead_custom", &api->graph_overhead_custom, why) &&
                    sym(base, "ggml_row_size", &api->row_size, why) &&
                    sym(base, "ggml_new_tensor_2d", &api->new_tensor_2d, why) &&
                    sym(base, "ggml_new_tensor_3d", &api->new_tensor_3d, why) &&
                    sym(base, "ggml_get_data", &api->get_data, why) &&
                    sym(base, "ggml_fp32_to_fp16_row", &api->fp32_to_fp16_row, why) &&
                    sym(base, "ggml_quantize_chunk", &api->quantize_chunk, why) &&
                    sym(base, "ggml_flash_attn_ext", &api->flash_attn_ext, why) &&
                    sym(base, "ggml_flash_attn_ext_set_prec", &api->flash_attn_ext_set_prec, why) &&
                    sym(base, "ggml_soft_max_ext", &api->soft_max_ext, why) &&
                    sym(base, "ggml_new_graph_custom", &api->new_graph_custom, why) &&
                    sym(base, "ggml_build_forward_expand", &api->build_forward_expand, why) &&
                    sym(base, "ggml_backend_graph_compute", &api->backend_graph_compute, why) &&
                    sym(base, "ggml_threadpool_params_init", &api->threadpool_params_init, why) &&
                    sym(cpu, "ggml_backend_cpu_init", &api->backend_cpu_init, why) &&
                    sym(cpu, "ggml_backend_cpu_set_n_threads", &api->backend_cpu_set_n_threads, why) &&
                    sym(cpu, "ggml_threadpool_new", &api->threadpool_new, why) &&
                    sym(cpu, "ggml_backend_cpu_set_threadpool", &api->backend_cpu_set_threadpool, why) &&
                    sym(cpu, "ggml_backend_score", &api->backend_score, why);
    if (!ok) return false;
    int major = -1, minor = -1;
    const char *version = api->version();
    if (std::sscanf(version, "%d.%d", &major, &minor) != 2 || major != 0 || minor < kTestedMinor[0] ||
        minor > kTestedMinor[1]) {
        *why = std::string("ggml: version ") + version + ", not one whose C API ggml_api.hpp was checked against (0." +
               std::to_string(kTestedMinor[0]) + " to 0." + std::to_string(kTestedMinor[1]) + ")";
        return false;
    }
    return true;
}

}  // namespace peers::ggml
