// libfem_assembly: Lagrange spaces (P1/P2, Q1/Q2, vector-valued), forms, boundary conditions,
// functionals and point evaluation; connectivity built once per mesh and space through the hash
// table and cached in the store, re-assembly a pure scatter through the element-to-slot map.
#pragma once

#include "fem/assembly/assemble.hpp"
#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/assembly/forms.hpp"
#include "fem/assembly/functionals.hpp"
#include "fem/assembly/locking.hpp"
#include "fem/assembly/plan.hpp"
#include "fem/assembly/point_evaluator.hpp"
#include "fem/assembly/quadrature.hpp"
#include "fem/assembly/space.hpp"
#include "fem/assembly/system.hpp"
