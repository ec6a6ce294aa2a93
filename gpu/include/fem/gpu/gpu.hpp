// libfem_gpu: the connectivity hash table on an explicit executor (CUDA device or its host twin)
// and the connectivity builders that use it (pattern + element-to-slot map, edges, facets).
#pragma once

#include "fem/gpu/connectivity.hpp"
#include "fem/gpu/executor.hpp"
#include "fem/gpu/hash_table.hpp"
#include "fem/gpu/keys.hpp"
