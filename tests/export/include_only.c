/* Every exported header included and nothing used: a firmware's other
 * translation units do that; it must compile warning-free (-Wall -Wextra). */
#include "d2l_mha.h"
#include "d2l_mha_fp16.h"
#include "state_dict.h"
#include "torch_kvdim.h"
#include "torch_mha.h"
#include "torch_mha_int8.h"
