/**
 * @file
 * edgeattn C API 1.0: every header of the library (types and status,
 * attention, KV cache, dense layers, weight conversion, positional encoding,
 * dispatch) and, unless EDGEATTN_NO_DEPRECATED is defined, the 0.x names
 * as deprecated wrappers (edgeattn/deprecated.h).
 */
#ifndef EDGEATTN_EDGEATTN_H
#define EDGEATTN_EDGEATTN_H

#include "edgeattn/types.h"
#include "edgeattn/attention.h"
#include "edgeattn/kv_cache.h"
#include "edgeattn/dense.h"
#include "edgeattn/convert.h"
#include "edgeattn/positional.h"
#include "edgeattn/rope.h"
#include "edgeattn/dispatch.h"
#include "edgeattn/deprecated.h"

#endif /* EDGEATTN_EDGEATTN_H */
