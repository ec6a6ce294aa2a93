// Qualifiers for code compiled by both the host compiler and nvcc (defined in shared).
#pragma once

#include "fem/hd.hpp"
