// edgeattn-peers: edgeattn beside ggml (flash_attn_ext, soft_max_ext)
// and ONNX Runtime (Attention, GroupQueryAttention, MultiHeadAttention,
// Softmax) on the same inputs, one thread each, in one process. The peers
// are prebuilt libraries opened with dlopen() (bench/peers/fetch.sh puts
// them in the build folder); nothing links them, so this program builds
// wherever Google Benchmark is found. See bench/README.md.
//
// Before anything is timed, every implementation's output is compared with
// a float64 reference computed from the same inputs; one that disagrees
// stops the program (exit 1). Then Google Benchmark runs every
// implementation of every row, repetitions shuffled together
// (--benchmark_enable_random_interleaving), each call timed on its own: a
// repetition's figure is its median call (calls another process preempted
// drop out), the table's the median over repetitions. It ends with a
// Markdown table: time per library, peer / edgeattn (above 1: edgeattn is
// faster), and for decode the GB/s of K and V read.
//
// Flags besides Google Benchmark's (each also read from the environment
// variable in brackets):
//   --peers_dir=DIR        where fetch.sh unpacked the packages [EDGEATTN_PEERS_DIR;
//                          default: the build's bench/peers]
//   --peers_isa=avx2       edgeattn_set_isa(EDGEATTN_ISA_AVX2) and ggml's AVX2
//                          CPU library (haswell); also scalar/sse2/avx512 [EDGEATTN_PEERS_ISA]
//   --peers_ggml_cpu=NAME  ggml's libggml-cpu-NAME.so [EDGEATTN_PEERS_GGML_CPU;
//                          default: the one ggml's loader would pick]
//   --peers_ort_lib=PATH   libonnxruntime.so [EDGEATTN_PEERS_ORT_LIB]
//   --peers_table=FILE     also write the Markdown table there
#include <benchmark/benchmark.h>
#include <glob.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "edgeattn/edgeattn.h"
#include "peers/ggml_api.hpp"
#include "peers/ort_api.hpp"
#include "peers/workloads.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

#ifndef EDGEATTN_PEERS_DEFAULT_DIR
#define EDGEATTN_PEERS_DEFAULT_DIR "peers"
#endif

namespace {

using peers::Dtype;
using peers::Impl;
using peers::Kind;
using peers::Shape;

struct Row {
    peers::Inputs in;
    std::vector<Impl> impls;
};

// The rows: decode over 128, 1024, 4096 positions with 8 and 2 kv heads;
// causal prefill 512 x 512; encoder 128 x 128; softmax 4096 x 128 and 1024 x 1024.
std::vector<Shape> shapes() {
    std::vector<Shape> s;
    for (std::size_t L : {128, 1024, 4096})
        for (std::size_t kv : {8, 2}) s.push_back({Kind::decode, L, kv});
    s.push_back({Kind::attention, 512, 1});
    s.push_back({Kind::attention, 128, 0});
    s.push_back({Kind::softmax, 4096, 128});
    s.push_back({Kind::softmax, 1024, 1024});
    return s;
}

std::string flag(int *argc, char **argv, const char *name, const char *env, const std::string &fallback) {
    std::string value = std::getenv(env) ? std::getenv(env) : fallback;
    const std::string prefix = std::string("--") + name + "=";
    int w = 1;
    for (int r = 1; r < *argc; ++r) {
        if (std::strncmp(argv[r], prefix.c_str(), prefix.size()) == 0)
            value = argv[r] + prefix.size();
        else
            argv[w++] = argv[r];
    }
    *argc = w;
    return value;
}

std::string first_glob(const std::string &pattern) {
    glob_t g{};
    std::string r;
    if (glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0) r = g.gl_pathv[0];
    globfree(&g);
    return r;
}

// Accuracy a row's storage type allows: fp32 agrees to float rounding;
// fp16 and int8 (q8_0) K, V carry their storage's rounding.
double tolerance(Dtype t) { return t == Dtype::f32 ? 1e-4 : t == Dtype::f16 ? 2e-2 : 3e-2; }

// rel L2 and max |diff| of out against ref; fails loudly beyond tolerance.
std::string check(const Row &row, const Impl &impl) {
    impl.call();
    if (!impl.output) return "";
    const std::vector<float> out = impl.output();
    const std::vector<double> &ref = row.in.ref;
    if (out.size() != ref.size()) {
        std::fprintf(stderr, "FAIL %s %s %s: %zu outputs, reference has %zu\n", row.in.shape.id().c_str(),
                     impl.library.c_str(), impl.what.c_str(), out.size(), ref.size());
        std::exit(1);
    }
    double num = 0, den = 0, worst = 0;
    bool finite = true;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double d = double(out[i]) - ref[i];
        finite = finite && std::isfinite(out[i]);
        num += d * d;
        den += ref[i] * ref[i];
        worst = std::max(worst, std::fabs(d));
    }
    const double rel = std::sqrt(num / den);
    char line[256];
    std::snprintf(line, sizeof line, "| %s | %s | %s | %s | %.1e | %.1e |", row.in.shape.label().c_str(),
                  peers::dtype_name(impl.dtype), impl.library.c_str(), impl.what.c_str(), rel, worst);
    if (!finite || !(rel <= tolerance(impl.dtype))) {
        std::fprintf(stderr, "FAIL (rel L2 above %.0e vs the float64 reference): %s\n", tolerance(impl.dtype), line);
        std::exit(1);
    }
    return line;
}

std::string bench_name(const Row &row, const Impl &impl) {
    std::string op = impl.what.substr(0, impl.what.find(' '));
    return "peers/" + row.in.shape.id() + "/" + peers::dtype_name(impl.dtype) + "/" + impl.library + ":" + op;
}

// Every repetition's median call, by benchmark name.
std::map<std::string, std::vector<double>> g_calls;

class Collector : public benchmark::ConsoleReporter {
  public:
    void ReportRuns(const std::vector<Run> &runs) override {
        for (const Run &r : runs) {
            if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
            auto it = r.counters.find("call_us");
            if (it != r.counters.end()) g_calls[r.run_name.function_name].push_back(it->second.value);
        }
        ConsoleReporter::ReportRuns(runs);
    }
};

void run_impl(benchmark::State &state, const Impl *impl) {
    std::vector<double> each;
    each.reserve(4096);
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        impl->call();
        each.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    std::nth_element(each.begin(), each.begin() + each.size() / 2, each.end());
    const double med = each[each.size() / 2];
    state.counters["call_us"] = med;
    if (impl->kv_bytes > 0) state.counters["kv_GBps"] = impl->kv_bytes / (med * 1e3);
}

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string fmt_us(double us) {
    char b[32];
    if (!(us > 0)) return "—";
    if (us < 100)
        std::snprintf(b, sizeof b, "%.2f µs", us);
    else if (us < 10000)
        std::snprintf(b, sizeof b, "%.0f µs", us);
    else
        std::snprintf(b, sizeof b, "%.1f ms", us / 1e3);
    return b;
}

std::string table(const std::vector<Row> &rows, std::vector<std::string> *misses) {
    std::string t =
        "| row | K/V | edgeattn | ggml | onnxruntime | ggml / edgeattn | onnxruntime / edgeattn | K+V GB/s: edgeattn · ggml · onnxruntime (plain read) |\n"
        "|---|---|---|---|---|---|---|---|\n";
    for (const Row &row : rows)
        for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::int8}) {
            // per library, its fastest implementation of this row and type
            struct Best {
                double us = NAN, bytes = 0;
                std::string what;
            };
            std::map<std::string, Best> best;
            for (const Impl &impl : row.impls) {
                auto measured = g_calls.find(bench_name(row, impl));
                if (impl.dtype != dt || measured == g_calls.end()) continue;  // filtered out
                const double us = median(measured->second);
                Best &b = best[impl.library];
                if (std::isnan(b.us) || us < b.us) b = {us, impl.kv_bytes, impl.what};
            }
            if (best.empty() || (best.size() == 1 && best.count("read bound"))) continue;
            const Best ea = best.count("edgeattn") ? best["edgeattn"] : Best{};
            auto cell = [&](const char *lib) {
                if (!best.count(lib)) return std::string("—");
                std::string c = fmt_us(best[lib].us);
                if (std::string(lib) == "onnxruntime") c += " (" + best[lib].what.substr(0, best[lib].what.find(' ')) + ")";
                return c;
            };
            auto ratio = [&](const char *lib) {
                if (!best.count(lib) || std::isnan(ea.us)) return std::string("—");
                char b[32];
                const double r = best[lib].us / ea.us;
                std::snprintf(b, sizeof b, "%.2f×", r);
                if (r < 1.2) {
                    misses->push_back(row.in.shape.label() + " " + peers::dtype_name(dt) + ": " + b + " vs " + lib);
                    return std::string("**") + b + "**";
                }
                return std::string(b);
            };
            auto gbs = [&](const char *lib) {
                if (!best.count(lib) || !(best[lib].bytes > 0)) return std::string("—");
                char b[32];
                std::snprintf(b, sizeof b, "%.1f", best[lib].bytes / (best[lib].us * 1e3));
                return std::string(b);
            };
            std::string bw = row.in.shape.kind == Kind::decode
                                 ? gbs("edgeattn") + " · " + gbs("ggml") + " · " + gbs("onnxruntime")
                                 : "";
            if (best.count("read bound")) bw += " (" + gbs("read bound") + ")";
            t += "| " + row.in.shape.label() + " | " + (row.in.shape.kind == Kind::softmax ? "—" : peers::dtype_name(dt)) +
                 " | " + cell("edgeattn") + " | " + cell("ggml") + " | " + cell("onnxruntime") + " | " + ratio("ggml") +
                 " | " + ratio("onnxruntime") + " | " + bw + " |\n";
        }
    return t;
}

bool has_flag(int argc, char **argv, const char *prefix) {
    for (int i = 1; i < argc; ++i)
        if (std::strncmp(argv[i], prefix, std::strlen(prefix)) == 0) return true;
    return false;
}

}  // namespace

int main(int argc, char **argv) {
    const std::string dir = flag(&argc, argv, "peers_dir", "EDGEATTN_PEERS_DIR", EDGEATTN_PEERS_DEFAULT_DIR);
    const std::string isa = flag(&argc, argv, "peers_isa", "EDGEATTN_PEERS_ISA", "");
    std::string ggml_cpu = flag(&argc, argv, "peers_ggml_cpu", "EDGEATTN_PEERS_GGML_CPU", "");
    std::string ort_lib = flag(&argc, argv, "peers_ort_lib", "EDGEATTN_PEERS_ORT_LIB", "");
    const std::string table_file = flag(&argc, argv, "peers_table", "EDGEATTN_PEERS_TABLE", "");
#if defined(_OPENMP)
    omp_set_num_threads(1);
#endif
    if (!isa.empty()) {
        const std::pair<const char *, edgeattn_isa> names[] = {{"scalar", EDGEATTN_ISA_SCALAR},
                                                               {"sse2", EDGEATTN_ISA_SSE2},
                                                               {"avx2", EDGEATTN_ISA_AVX2},
                                                               {"avx512", EDGEATTN_ISA_AVX512}};
        bool known = false;
        for (const auto &n : names)
            if (isa == n.first) {
                known = true;
                if (edgeattn_set_isa(n.second) != EDGEATTN_OK) {
                    std::fprintf(stderr, "edgeattn: path %s not available here\n", n.first);
                    return 2;
                }
            }
        if (!known) {
            std::fprintf(stderr, "--peers_isa: scalar, sse2, avx2 or avx512\n");
            return 2;
        }
        if (ggml_cpu.empty() && isa == "avx2") ggml_cpu = "haswell";  // AVX2, FMA, F16C
    }
    std::string info = std::string("edgeattn ") + edgeattn_isa_name(edgeattn_current_isa());

    // ---------------------------------------------------------------- peers
    static peers::ggml::Api gapi;
    peers::ggml::backend *cpu = nullptr;
    std::string why;
    if (peers::ggml::load(dir + "/ggml/bins/linux-x64", ggml_cpu, &gapi, &why)) {
        cpu = gapi.backend_cpu_init();
        gapi.backend_cpu_set_n_threads(cpu, 1);
        // a persistent one-thread pool, as llama.cpp keeps one
        alignas(64) static unsigned char params[8192];
        gapi.threadpool_params_init(params, 1);
        gapi.backend_cpu_set_threadpool(cpu, gapi.threadpool_new(params));
        info += std::string("; ggml ") + gapi.version() + " (" + gapi.commit() + "), libggml-cpu-" + gapi.variant + ".so";
    } else {
        std::fprintf(stderr, "ggml skipped: %s (bench/peers/fetch.sh %s)\n", why.c_str(), dir.c_str());
    }
    static peers::ort::Runtime ort;
    bool have_ort = false;
    if (ort_lib.empty()) ort_lib = first_glob(dir + "/onnxruntime-node/bin/napi-v*/linux/x64/libonnxruntime.so*");
    if (!ort_lib.empty() && peers::ort::start(ort_lib, &ort, &why)) {
        have_ort = true;
        info += "; onnxruntime " + ort.api.version;
    } else {
        std::fprintf(stderr, "onnxruntime skipped: %s (bench/peers/fetch.sh %s)\n",
                     ort_lib.empty() ? "no libonnxruntime.so" : why.c_str(), dir.c_str());
    }
    std::fprintf(stderr, "# %s\n", info.c_str());
    benchmark::AddCustomContext("peers", info);

    // ---------------------------------------------------------------- rows, checked
    static std::vector<Row> rows;
    std::string agreement = "| row | K/V | library | call | rel L2 vs float64 | max abs |\n|---|---|---|---|---|---|\n";
    for (const Shape &s : shapes()) {
        Row row{peers::make_inputs(s), {}};
        peers::add_edgeattn(row.in, &row.impls);
        if (cpu) peers::add_ggml(gapi, cpu, row.in, &row.impls);
        if (have_ort) peers::add_ort(ort, row.in, &row.impls);
        peers::add_read_bound(row.in, &row.impls);
        for (const Impl &impl : row.impls)
            if (impl.output) agreement += check(row, impl) + "\n";
        rows.push_back(std::move(row));
    }
    std::fprintf(stderr, "# every output agrees with the float64 reference\n");

    // ---------------------------------------------------------------- timing
    for (const Row &row : rows)
        for (const Impl &impl : row.impls)
            benchmark::RegisterBenchmark(bench_name(row, impl).c_str(), run_impl, &impl)
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
    // defaults: 9 repetitions, shuffled together, 0.05 s each
    std::vector<char *> args(argv, argv + argc);
    std::string reps = "--benchmark_repetitions=9", inter = "--benchmark_enable_random_interleaving=true",
                mt = "--benchmark_min_time=0.05";
    if (!has_flag(argc, argv, "--benchmark_repetitions")) args.push_back(&reps[0]);
    if (!has_flag(argc, argv, "--benchmark_enable_random_interleaving")) args.push_back(&inter[0]);
    if (!has_flag(argc, argv, "--benchmark_min_time")) args.push_back(&mt[0]);
    int n = static_cast<int>(args.size());
    benchmark::Initialize(&n, args.data());
    if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
    Collector collector;
    benchmark::RunSpecifiedBenchmarks(&collector);
    benchmark::Shutdown();

    std::vector<std::string> misses;
    std::string out = "\n" + info + "; one thread each; median over repetitions of each repetition's median call\n\n" +
                      table(rows, &misses);
    out += "\nBelow 1.2× (edgeattn less than 1.2 times as fast as the peer): ";
    if (misses.empty()) out += "none";
    for (std::size_t i = 0; i < misses.size(); ++i) out += (i ? "; " : "") + misses[i];
    out += "\n\nAgreement (one call each, before timing):\n\n" + agreement;
    std::fputs(out.c_str(), stdout);
    if (!table_file.empty())
        if (FILE *f = std::fopen(table_file.c_str(), "w")) {
            std::fputs(out.c_str(), f);
            std::fclose(f);
        }
    return 0;
}
