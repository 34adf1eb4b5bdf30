// edgeattn_set_isa, and on bare metal the tables of every path: linked
// only into images that choose a path (path_tables.hpp says why).
#include "path_tables.hpp"
#include "validate.hpp"

namespace edgeattn {
namespace detail {

#if defined(EDGEATTN_BARE_METAL)
#define EDGEATTN_DEFINE_CHOSEN(type, family) \
    const type &chosen_path_##family(int isa) { EDGEATTN_SWITCH_PATH_TABLE(isa, family) }
EDGEATTN_PATH_FAMILIES(EDGEATTN_DEFINE_CHOSEN)
#undef EDGEATTN_DEFINE_CHOSEN
#endif

}  // namespace detail
}  // namespace edgeattn

// The edgeattn_isa argument is read as an int (enum_as_int): a C caller may
// pass any int, and loading one outside the enumerators' range as the enum
// is undefined.
extern "C" edgeattn_status edgeattn_set_isa(edgeattn_isa isa_arg) {
    using namespace edgeattn::detail;
    const int isa = enum_as_int(isa_arg);
    if (isa != EDGEATTN_ISA_AUTO && !path_supported(isa)) return EDGEATTN_ERR_UNSUPPORTED_ISA;
    chosen_path.store(isa == EDGEATTN_ISA_AUTO ? best_path() : isa, std::memory_order_release);
    return EDGEATTN_OK;
}
