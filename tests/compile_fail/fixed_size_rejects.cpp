// Compiled by CTest with -DCASE=n (tests/library_tests.cmake): the fixed-size
// C++ API must refuse at compile time, with a static_assert, what the C API
// would refuse at run time; CASE=0 must compile (the control).
#include <edgeattn/edgeattn.hpp>

#include <cstdint>

#if CASE == 1  // a tensor's byte size overflows size_t
edgeattn::DotProductAttention<SIZE_MAX / 4, 2, 2, 2, 2> module;
#elif CASE == 2  // num_hiddens % num_heads != 0
edgeattn::MultiHeadAttention<1, 1, 1, 4, 4, 4, 6, 4> module(edgeattn_weights{});
#elif CASE == 3  // n > max_len
edgeattn::PositionalSelfAttention<1, 8, 4, 2, 4> module(edgeattn_weights{});
#elif CASE == 4  // softmax tensor overflows
auto *softmax = &edgeattn::masked_softmax<SIZE_MAX / 8, 1, 3>;
#elif CASE == 5  // a zero dimension
edgeattn::AdditiveAttention<1, 0, 1, 1, 1, 1, 1> module(edgeattn_weights{});
#else
edgeattn::PositionalSelfAttention<1, 8, 4, 2, 8> module(edgeattn_weights{});
#endif

int main() { return 0; }
