/**
 * @file config.h
 * What the library is built with. Each EDGEATTN_WITH_* is 1 unless the
 * library's build sets it to 0: CMake's EDGEATTN_LEAVE_OUT (a list of the
 * names below in lower case, without EDGEATTN_WITH_), or the macro itself
 * on the compiler's command line for every file of the library
 * (-DEDGEATTN_WITH_ALIBI=0). A feature left out is not in the library:
 * an image carries none of its code, and a call that asks for it returns
 * ::EDGEATTN_ERR_NOT_BUILT before it writes anything. Firmware that knows
 * which options its model sets leaves out the rest (docs/ports.md: what
 * each costs in flash); a build that leaves out nothing is the library as
 * documented everywhere else.
 */
#ifndef EDGEATTN_CONFIG_H
#define EDGEATTN_CONFIG_H

/** ONNX Attention's score options beyond d2l's: options.softcap,
    options.masking = EXCLUDE and options.weights_output other than
    SOFTMAX (options.scale stays). */
#ifndef EDGEATTN_WITH_SCORE_OPTIONS
#define EDGEATTN_WITH_SCORE_OPTIONS 1
#endif

/** ALiBi: mask.alibi_max_bias. */
#ifndef EDGEATTN_WITH_ALIBI
#define EDGEATTN_WITH_ALIBI 1
#endif

/** The mask's additive bias: mask.bias. */
#ifndef EDGEATTN_WITH_MASK_BIAS
#define EDGEATTN_WITH_MASK_BIAS 1
#endif

/** Rows of more than 256 keys whose attention weights are not asked for
    (or not as the softmax gives them): the streaming softmax over key
    blocks. Left out, edgeattn_sdpa and edgeattn_mha over more than 256 keys
    and a KV cache attend over a capacity above 256 take such rows only
    with the softmax's weights output. */
#ifndef EDGEATTN_WITH_LONG_ROWS
#define EDGEATTN_WITH_LONG_ROWS 1
#endif

/** binary16 anywhere: options.tensor_type = EDGEATTN_DTYPE_F16 (activations
    and outputs at the boundary), weight matrices of type F16, a KV cache
    stored in F16. */
#ifndef EDGEATTN_WITH_HALF
#define EDGEATTN_WITH_HALF 1
#endif

/** int8: weight matrices of type EDGEATTN_DTYPE_INT8, a KV cache stored in
    INT8. */
#ifndef EDGEATTN_WITH_INT8
#define EDGEATTN_WITH_INT8 1
#endif

/** The int8 arithmetic: a weight matrix's arithmetic =
    EDGEATTN_ARITHMETIC_INT8 (edgeattn_dense, edgeattn_mha), and a workspace
    request's. Left out with int8 too. */
#ifndef EDGEATTN_WITH_INT8_ARITHMETIC
#define EDGEATTN_WITH_INT8_ARITHMETIC 1
#endif

#endif
