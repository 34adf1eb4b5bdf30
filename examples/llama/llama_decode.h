/* Greedy decoding of an exported Llama-style model (tools/export_torch.py
 * --model llama) through the edgeattn C API, in fixed static memory: the
 * decoder of examples/llama, shared by its hosted program (main.c) and its
 * Cortex-M4F firmware (tests/firmware/llama_firmware.cpp). */
#ifndef EDGEATTN_EXAMPLE_LLAMA_DECODE_H
#define EDGEATTN_EXAMPLE_LLAMA_DECODE_H

#include <edgeattn/types.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A step's logits may differ from the float64 reference's by this much
 * relative to the largest |logit| of the whole answer: float32 arithmetic
 * on the same (stored, dequantised) weights is ~1e-6 away; a wrong
 * rotation, mask or cache row is ~1e-1 away. */
#define LLAMA_LOGIT_TOLERANCE 1e-4

/* How each layer's attention runs. */
typedef enum llama_path {
    /* kv_cache_store with W_k, W_v and the rope option (keys rotated as
       they are stored), kv_cache_attend with W_q, W_o and the rope option */
    LLAMA_FUSED = 0,
    /* q, k, v through edgeattn_dense, q and k through edgeattn_rope_apply,
       then the cache calls with EDGEATTN_DTYPE_NONE projections (W_o still
       in the attend) */
    LLAMA_PROJECTION_FREE = 1
} llama_path;

/* What a run did and found. */
typedef struct llama_result {
    edgeattn_status status;      /* EDGEATTN_OK, or the first failed call's status */
    const char *failed_call;     /* that call's name, or NULL */
    const int32_t *tokens;       /* the greedy tokens, `generated` of them */
    size_t generated;            /* tokens decoded (stops at the first mismatch) */
    size_t steps;                /* tokens expected */
    size_t first_mismatch;       /* index of the first token unlike the expected one, or steps */
    double max_abs_error;        /* largest |logit - expected| over the steps decoded */
    double logit_scale;          /* the largest |expected logit| */
    size_t positions;            /* tokens fed through the model */
    size_t window, sinks;        /* the KV caches' window and sinks (0, 0: no window) */
    size_t cache_capacity;       /* rows each layer's cache holds */
    size_t cache_bytes;          /* edgeattn_kv_cache_memory_size() of one layer's cache */
    size_t workspace_bytes;      /* edgeattn_workspace_size() of every call of a step */
    size_t static_ram_bytes;     /* the decoder's static buffers: caches, workspace, activations, RoPE table */
    size_t weight_bytes;         /* the model's const arrays (flash) */
} llama_result;

/* Decodes the exported prompt and steps greedily, compares tokens and
 * logits with the exported expected ones; 0 when every token matches and
 * every logit is within LLAMA_LOGIT_TOLERANCE, else 1 (result says why). */
int llama_decode(llama_path path, llama_result *result);

/* "fused", "projection-free" */
const char *llama_path_name(llama_path path);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
