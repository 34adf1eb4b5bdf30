// Text heatmap of one attention map, the terminal's stand-in for d2l's
// show_heatmaps: queries as rows, keys as columns.
#ifndef EDGEATTN_DEMO_HEATMAP_HPP
#define EDGEATTN_DEMO_HEATMAP_HPP

#include <cstddef>

namespace demo {

// Prints weights (queries, keys), row-major, as shaded cells with the values
// beside each row. Like matplotlib's default colour scale in show_heatmaps,
// the shades span this map's own range (smallest to largest nonzero weight),
// so a nearly uniform map still shows its structure; an exact 0 (a masked
// key) is blank.
void print_heatmap(const float *weights, std::size_t queries, std::size_t keys);

// One line explaining the shades print_heatmap uses.
void print_heatmap_legend();

}  // namespace demo

#endif
