/**
 * @file
 * Kept for one release so that 0.x programs that include it still build:
 * everything it declared is in edgeattn/edgeattn.h.
 */
#include "edgeattn/edgeattn.h"
