/// @file
/// edgeattn C++17 API: every C++ header (the fixed-size attention modules,
/// the KV cache module, the compile-time positional-encoding table) and the
/// C API (edgeattn/edgeattn.h).
#ifndef EDGEATTN_EDGEATTN_HPP
#define EDGEATTN_EDGEATTN_HPP

#include "edgeattn.h"
#include "attention.hpp"
#include "kv_cache.hpp"
#include "positional_encoding.hpp"
#include "rope.hpp"

#endif
