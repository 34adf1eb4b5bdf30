#!/bin/sh
# fetch.sh [DIR]: put the prebuilt peer libraries edgeattn-peers
# opens where it looks for them (DIR, default build-bench/bench/peers):
#   DIR/ggml/bins/linux-x64/libggml-base.so, libggml-cpu-<variant>.so
#       ggml 0.25.1 (llama.cpp 0ad4a86), CPU libraries for every x86-64 level,
#       from the npm package @node-llama-cpp/linux-x64 3.22.1 (MIT)
#   DIR/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1
#       ONNX Runtime 1.30.0 (CPU), from the npm package onnxruntime-node (MIT)
# `npm pack` downloads each package's tarball (120 MB); no install script
# runs and nothing is installed. Only the Linux x86-64 libraries and
# package.json are unpacked (75 MB). Needs npm and the
# npm registry.
set -eu
DIR=${1:-build-bench/bench/peers}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
unpack() {  # unpack SPEC SUBDIR MEMBER...: the package's MEMBERs into DIR/SUBDIR
    if [ -f "$DIR/$2/.unpacked" ]; then
        echo "$DIR/$2: already there"
        return 0
    fi
    spec=$1 sub=$2
    shift 2
    tgz=$(cd "$DIR" && npm pack --silent "$spec" | tail -n 1)
    mkdir -p "$DIR/$sub"
    tar xzf "$DIR/$tgz" -C "$DIR/$sub" --strip-components=1 --wildcards package/package.json "$@"
    rm -f "$DIR/$tgz"
    touch "$DIR/$sub/.unpacked"
    echo "$DIR/$sub: $spec"
}
unpack @node-llama-cpp/linux-x64@3.22.1 ggml package/LICENSE 'package/bins/linux-x64/*'
unpack onnxruntime-node@1.30.0 onnxruntime-node 'package/bin/napi-v*/linux/x64/*'
