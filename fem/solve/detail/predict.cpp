// Too large is said early: the fill of a symmetric factorization from the elimination tree and
// column counts, and the check of a symbolic analysis' prediction against the memory available
// (see docs/solve.md, "Too large for the machine").
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fem/memory.hpp>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/solve.hpp>

namespace fem::solve::detail {

std::int64_t cholesky_nonzeros(index_t n, const index_t* offsets, const index_t* indices,
                               const index_t* order) {
  if (n <= 0) return 0;
  const auto N = static_cast<std::size_t>(n);
  auto at = [](std::vector<index_t>& v, index_t i) -> index_t& { return v[static_cast<std::size_t>(i)]; };
  std::vector<index_t> pinv(N);  // old → new
  for (index_t k = 0; k < n; ++k) pinv[static_cast<std::size_t>(order ? order[k] : k)] = k;

  // S = P (A + Aᵀ) Pᵀ without its diagonal, as adjacency lists (duplicates are harmless below).
  std::vector<std::size_t> start(N + 1, 0);
  for (index_t i = 0; i < n; ++i)
    for (index_t p = offsets[i]; p < offsets[i + 1]; ++p)
      if (const index_t j = indices[p]; j != i) {
        ++start[static_cast<std::size_t>(at(pinv, i)) + 1];
        ++start[static_cast<std::size_t>(at(pinv, j)) + 1];
      }
  for (std::size_t k = 0; k < N; ++k) start[k + 1] += start[k];
  std::vector<index_t> adj(start[N]);
  {
    std::vector<std::size_t> fill(start.begin(), start.end() - 1);
    for (index_t i = 0; i < n; ++i)
      for (index_t p = offsets[i]; p < offsets[i + 1]; ++p)
        if (const index_t j = indices[p]; j != i) {
          const index_t a = at(pinv, i), b = at(pinv, j);
          adj[fill[static_cast<std::size_t>(a)]++] = b;
          adj[fill[static_cast<std::size_t>(b)]++] = a;
        }
  }
  pinv = {};

  // Elimination tree (Liu), with path compression through `ancestor`.
  std::vector<index_t> parent(N, -1), ancestor(N, -1);
  for (index_t k = 0; k < n; ++k)
    for (std::size_t q = start[static_cast<std::size_t>(k)]; q < start[static_cast<std::size_t>(k) + 1]; ++q)
      for (index_t i = adj[q]; i != -1 && i < k;) {
        const index_t next = at(ancestor, i);
        at(ancestor, i) = k;
        if (next == -1) at(parent, i) = k;
        i = next;
      }

  // Postorder of the tree (children before parents), by an explicit depth-first stack.
  std::vector<index_t> post(N), head(N, -1), sibling(N, -1), stack;
  for (index_t j = n - 1; j >= 0; --j)
    if (const index_t p = at(parent, j); p != -1) {
      at(sibling, j) = at(head, p);
      at(head, p) = j;
    }
  std::size_t k = 0;
  for (index_t root = 0; root < n; ++root) {
    if (at(parent, root) != -1) continue;
    stack.push_back(root);
    while (!stack.empty()) {
      const index_t p = stack.back();
      const index_t child = at(head, p);
      if (child == -1) {
        stack.pop_back();
        post[k++] = p;
      } else {
        at(head, p) = at(sibling, child);
        stack.push_back(child);
      }
    }
  }
  head = {};
  sibling = {};

  // Column counts: delta[j] counts j's own entries minus overlaps; summed up the tree they give
  // the column counts of L. `first[j]`: the first postorder index of j's subtree.
  std::vector<index_t> first(N, -1), maxfirst(N, -1), prevleaf(N, -1), delta(N, 0);
  for (std::size_t i = 0; i < N; ++i) ancestor[i] = static_cast<index_t>(i);
  for (std::size_t q = 0; q < N; ++q) {
    index_t j = post[q];
    at(delta, j) = at(first, j) == -1 ? 1 : 0;  // j is a leaf of the etree
    for (; j != -1 && at(first, j) == -1; j = at(parent, j)) at(first, j) = static_cast<index_t>(q);
  }
  for (std::size_t q = 0; q < N; ++q) {
    const index_t j = post[q];
    if (at(parent, j) != -1) --at(delta, at(parent, j));
    for (std::size_t e = start[static_cast<std::size_t>(j)]; e < start[static_cast<std::size_t>(j) + 1];
         ++e) {
      // Is j a leaf of the row subtree of i (an entry (i, j), i > j)?
      const index_t i = adj[e];
      if (i <= j || at(first, j) <= at(maxfirst, i)) continue;
      at(maxfirst, i) = at(first, j);
      const index_t jprev = at(prevleaf, i);
      at(prevleaf, i) = j;
      ++at(delta, j);
      if (jprev == -1) continue;  // j is the first leaf of row i's subtree
      // Not the first: the least common ancestor of jprev and j loses the overlap.
      index_t lca = jprev;
      while (lca != at(ancestor, lca)) lca = at(ancestor, lca);
      for (index_t s = jprev; s != lca;) {
        const index_t up = at(ancestor, s);
        at(ancestor, s) = lca;
        s = up;
      }
      --at(delta, lca);
    }
    if (at(parent, j) != -1) at(ancestor, j) = at(parent, j);
  }
  std::int64_t total = 0;
  std::vector<std::int64_t> count(delta.begin(), delta.end());
  for (std::size_t j = 0; j < N; ++j) {
    if (const index_t p = parent[j]; p != -1) count[static_cast<std::size_t>(p)] += count[j];  // p > j
    total += count[j];
  }
  return total;
}

std::string format_count(double count) {
  if (count < 1e6) return fmt::format("{:.0f}", count);
  int exponent = static_cast<int>(std::floor(std::log10(count)));
  double mantissa = count / std::pow(10.0, exponent);
  if (std::round(mantissa * 10) >= 100) {
    mantissa /= 10;
    ++exponent;
  }
  return fmt::format("{:.1f}e{}", mantissa, exponent);
}

std::string too_large_reason(Backend backend, Ordering ordering, const Prediction& prediction,
                             std::string_view what) {
  std::string r = fmt::format("{}: the factor would ", to_string(backend));
  if (prediction.nonzeros >= 0)
    r += fmt::format("hold {} nonzeros ({}, {})", format_count(prediction.nonzeros),
                     format_bytes(prediction.factor_bytes), prediction.basis);
  else
    r += fmt::format("need {} ({})", format_bytes(prediction.factor_bytes), prediction.basis);
  r += what;
  r += ": the problem is too large for a direct solver on this machine; use an iterative or distributed "
       "solver (the fem executable: --solver gamg or --solver hypre, or mpirun -np N fem ... for MUMPS over "
       "N processes; the library: solve::Options backend gamg, hypre or mumps, through fem::dist), solve a "
       "smaller problem (a coarser mesh, a lower degree) or use a machine with more memory";
  if (ordering != Ordering::metis && available(Ordering::metis))
    r += "; the metis ordering usually fills much less on 3D problems";
  return r;
}

Result out_of_memory(Backend backend, const Prediction& prediction) {
  return {Status::out_of_memory,
          fmt::format("{}: out of memory in the numeric factorization (the factors need about {}, {} were "
                      "available before it)",
                      to_string(backend), format_bytes(prediction.factor_bytes),
                      format_bytes(static_cast<double>(available_memory()))),
          -1, -1};
}

Result check_fits(Backend backend, Ordering ordering, const Prediction& prediction) {
  if (!(prediction.factor_bytes >= 0)) return {};
  const double need = (prediction.factor_bytes + prediction.workspace_bytes) * memory_safety_factor;
  // Measuring costs some 40 us of /proc and cgroup reads, a lot next to a small factorization:
  // below 16 MiB only a FEM_MEMORY_LIMIT is compared with (a process that cannot find 16 MiB
  // more fails elsewhere first).
  const char* limit = std::getenv("FEM_MEMORY_LIMIT");
  if (need < 16.0 * (1 << 20) && (limit == nullptr || *limit == '\0')) return {};
  const MemoryAvailable memory = memory_available();
  if (need <= static_cast<double>(memory.bytes)) return {};
  const std::string what = fmt::format(
      " and needs {} with its workspace and a margin of {:.0f}%, but {} of memory are available ({})",
      format_bytes(need), (memory_safety_factor - 1) * 100, format_bytes(static_cast<double>(memory.bytes)),
      memory.source);
  return {Status::too_large, too_large_reason(backend, ordering, prediction, what), -1, -1};
}

}  // namespace fem::solve::detail
