#!/bin/sh
# fetch.sh [DIR]: put the prebuilt peer libraries edgeattn-peers
# opens where it looks for them (DIR, default build-bench/bench/peers):
#   DIR/ggml/bins/linux-x64/libggml-base.so, libggml-cpu-<variant>.so
#       ggml 0.25.1 (llama.cpp 0ad4a86), CPU libraries for every x86-64 level,
#       from the npm package @node-llama-cpp/linux-x64 3.22.1 (MIT)
#   DIR/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1
#       ONNX Runtime 1.30.0 (CPU), from the npm package onnxruntime-node (MIT)
# `npm pack` downloads each package's tarball; no install scripts run and
# nothing else is installed. Needs npm and the npm registry; about 100 MB.
set -eu
DIR=${1:-build-bench/bench/peers}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
unpack() {  # unpack SPEC SUBDIR
    if [ -f "$DIR/$2/package.json" ]; then
        echo "$DIR/$2: already there"
        return 0
    fi
    tgz=$(cd "$DIR" && npm pack --silent "$1" | tail -n 1)
    mkdir -p "$DIR/$2"
    tar xzf "$DIR/$tgz" -C "$DIR/$2" --strip-components=1
    rm -f "$DIR/$tgz"
    echo "$DIR/$2: $1"
}
unpack @node-llama-cpp/linux-x64@3.22.1 ggml
unpack onnxruntime-node@1.30.0 onnxruntime-node
