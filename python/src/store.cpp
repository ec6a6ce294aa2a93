// fem.store (the process-wide store, the same one the C ABI and every kernel library use),
// fem.CsrPattern and fem.CsrMatrix.
#include "fem/store.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <limits>

#include "common.hpp"
#include "fem/array.hpp"
#include "fem/mesh.hpp"
#include "fem/solve/solve.hpp"

namespace fem::python {
namespace {

std::vector<py::ssize_t> shape_of(const std::vector<std::int64_t>& s) { return {s.begin(), s.end()}; }

template <class T>
py::object array_view(const Store& store, const std::string& key) {
  auto a = store.get<Array<T>>(key);
  return readonly_view(a->data().data(), shape_of(a->shape()), a);
}

py::dict info_dict(const EntryInfo& e) {
  py::dict d;
  d["key"] = e.key;
  d["type"] = e.type;
  d["version"] = e.version;
  d["bytes"] = e.bytes;
  d["evictable"] = e.evictable;
  py::list inputs;
  for (const auto& in : e.inputs) inputs.append(py::make_tuple(in.key, in.version));
  d["inputs"] = inputs;
  d["hits"] = e.hits;
  d["residency"] = e.residency == Residency::host ? "host" : "device";
  return d;
}

index_t checked_index(py::ssize_t n, const char* what) {
  FEM_EXPECTS(n >= 0 && n <= std::numeric_limits<index_t>::max(), "{} {} does not fit the 32-bit indices",
              what, static_cast<std::int64_t>(n));
  return static_cast<index_t>(n);
}

/// A copy of a SciPy sparse matrix as a CsrMatrix (duplicates summed, columns sorted).
std::shared_ptr<const CsrMatrix> from_scipy(py::handle m) {
  FEM_EXPECTS(std::string(py::str(m.attr("dtype").attr("kind"))) != "c",
              "complex matrices cannot be stored (the kernels are real)");
  py::object csr = m.attr("tocsr")(py::arg("copy") = true);
  csr.attr("sum_duplicates")();
  csr.attr("sort_indices")();
  auto shape = csr.attr("shape").cast<std::pair<py::ssize_t, py::ssize_t>>();
  auto pattern = std::make_shared<const CsrPattern>(
      checked_index(shape.first, "rows"), checked_index(shape.second, "columns"),
      checked_int32(csr.attr("indptr"), "indptr"), checked_int32(csr.attr("indices"), "indices"));
  DoubleArray data = DoubleArray::ensure(csr.attr("data"));
  FEM_EXPECTS(data, "the sparse matrix's data are not numbers");
  std::vector<double> values(data.data(), data.data() + data.size());
  return std::make_shared<const CsrMatrix>(std::move(pattern), std::move(values));
}

bool is_scipy_sparse(py::handle v) {
  return py::hasattr(v, "tocsr") && py::hasattr(v, "nnz") && !py::isinstance<CsrMatrix>(v);
}

template <class T>
Version put_array(Store& store, const std::string& key, py::array a) {
  // The converting constructor raises what numpy raised (a MemoryError making a contiguous copy);
  // ensure() would swallow it.
  py::array_t<T, py::array::c_style | py::array::forcecast> c(a);
  std::vector<std::int64_t> shape(c.shape(), c.shape() + c.ndim());
  std::vector<T> values(c.data(), c.data() + c.size());
  return store.put(key, Array<T>(std::move(shape), std::move(values)));
}

Version put_value(Store& store, const std::string& key, py::handle value) {
  Store::validate_key(key);
  if (py::isinstance<CsrMatrix>(value))
    return store.put<CsrMatrix>(key, value.cast<std::shared_ptr<CsrMatrix>>());
  if (py::isinstance<Mesh>(value)) return store.put<Mesh>(key, value.cast<std::shared_ptr<Mesh>>());
  if (is_scipy_sparse(value)) return store.put<CsrMatrix>(key, from_scipy(value));
  py::array a = py::array::ensure(value);
  FEM_EXPECTS(
      a,
      "store key '{}': cannot store a {} (arrays, SciPy sparse matrices, fem.CsrMatrix and fem.Mesh can be)",
      key, std::string(py::str(py::type::of(value).attr("__name__"))));
  const char kind = a.dtype().kind();
  if (kind == 'f' || kind == 'b') return put_array<double>(store, key, a);
  if (kind == 'u' && a.dtype().itemsize() == 8) {
    py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast> u(a);
    for (py::ssize_t i = 0; i < u.size(); ++i)
      FEM_EXPECTS(u.data()[i] <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                  "store key '{}': entry {} is {}, beyond int64", key, i, u.data()[i]);
  }
  if (kind == 'i' || kind == 'u') {
    if (a.dtype().itemsize() <= 4 && !(kind == 'u' && a.dtype().itemsize() == 4))
      return put_array<std::int32_t>(store, key, a);
    return put_array<std::int64_t>(store, key, a);
  }
  throw InvalidArgument(
      fmt::format("store key '{}': arrays of dtype {} cannot be stored (float64, int32, int64)", key,
                  std::string(py::str(a.dtype()))));
}

}  // namespace

py::object stored_value(const Store& store, const std::string& key) {
  const std::string type = store.type_of(key);
  if (type == type_name<Array<double>>::value) return array_view<double>(store, key);
  if (type == type_name<Array<std::int32_t>>::value) return array_view<std::int32_t>(store, key);
  if (type == type_name<Array<std::int64_t>>::value) return array_view<std::int64_t>(store, key);
  if (type == type_name<CsrMatrix>::value) return py::cast(held(store.get<CsrMatrix>(key)));
  if (type == type_name<CsrPattern>::value) return py::cast(held(store.get<CsrPattern>(key)));
  if (type == type_name<Mesh>::value) return py::cast(held(store.get<Mesh>(key)));
  if (type == type_name<solve::Factorization>::value)
    return py::cast(held(store.get<solve::Factorization>(key)));
  throw TypeError(
      key, "an array, CsrMatrix, CsrPattern, Mesh or Factorization (store.info(key) describes others)", type);
}

void bind_store(py::module_& m) {
  py::class_<CsrPattern, std::shared_ptr<CsrPattern>>(
      m, "CsrPattern", "An immutable CSR structure, shared by every matrix of it.")
      .def(py::init([](py::ssize_t rows, py::ssize_t cols, py::handle indptr, py::handle indices) {
             return std::make_shared<CsrPattern>(checked_index(rows, "rows"), checked_index(cols, "columns"),
                                                 checked_int32(indptr, "indptr"),
                                                 checked_int32(indices, "indices"));
           }),
           py::arg("rows"), py::arg("cols"), py::arg("indptr"), py::arg("indices"))
      .def_property_readonly("shape", [](const CsrPattern& p) { return py::make_tuple(p.rows(), p.cols()); })
      .def_property_readonly("nnz", &CsrPattern::nnz)
      .def_property_readonly("indptr",
                             [](std::shared_ptr<CsrPattern> p) { return readonly_view(p->row_offsets(), p); })
      .def_property_readonly("indices",
                             [](std::shared_ptr<CsrPattern> p) { return readonly_view(p->col_indices(), p); })
      .def(
          "row_of_nonzeros",
          [](const CsrPattern& p) {
            std::vector<index_t> rows(p.nnz());
            for (index_t r = 0; r < p.rows(); ++r)
              for (index_t k = p.row_offsets()[r]; k < p.row_offsets()[r + 1]; ++k)
                rows[static_cast<std::size_t>(k)] = r;
            return to_numpy(std::move(rows));
          },
          "The row of each nonzero (a fresh int32 array).")
      .def(
          "outer_values",
          [](const CsrPattern& p, const DoubleArray& u, const DoubleArray& v, double scale) {
            // scale · Σ_k u[row, k] v[col, k] at every nonzero: the gradient of a solve with respect to
            // the matrix values (u = Aᵀ⁻¹ ∂L/∂x, v = x, scale = −1), in one pass over the pattern.
            FEM_EXPECTS(u.ndim() == v.ndim() && u.ndim() >= 1 && u.ndim() <= 2 && u.shape(0) == p.rows() &&
                            v.shape(0) == p.cols() && (u.ndim() == 1 || u.shape(1) == v.shape(1)),
                        "outer_values: u of shape ({},) or ({}, k) and v of shape ({},) or ({}, k)", p.rows(),
                        p.rows(), p.cols(), p.cols());
            const std::size_t k = u.ndim() == 1 ? 1 : static_cast<std::size_t>(u.shape(1));
            std::vector<double> out(p.nnz());
            without_gil([&] {
              const double *U = u.data(), *V = v.data();
              const auto offsets = p.row_offsets();
              const auto cols = p.col_indices();
              for (index_t r = 0; r < p.rows(); ++r) {
                const double* ur = U + static_cast<std::size_t>(r) * k;
                for (index_t s = offsets[r]; s < offsets[r + 1]; ++s) {
                  const double* vc = V + static_cast<std::size_t>(cols[static_cast<std::size_t>(s)]) * k;
                  double sum = 0;
                  for (std::size_t j = 0; j < k; ++j) sum += ur[j] * vc[j];
                  out[static_cast<std::size_t>(s)] = scale * sum;
                }
              }
            });
            return to_numpy(std::move(out));
          },
          py::arg("u"), py::arg("v"), py::arg("scale") = 1.0,
          "scale · Σ_k u[row, k]·v[col, k] at every nonzero (the gradient of a solve on the pattern).")
      .def_property_readonly("fingerprint", &CsrPattern::fingerprint)
      .def("same_structure", &CsrPattern::same_structure)
      .def("__repr__", [](const CsrPattern& p) {
        return fmt::format("<fem.CsrPattern {}x{}, {} nonzeros>", p.rows(), p.cols(), p.nnz());
      });

  py::class_<CsrMatrix, std::shared_ptr<CsrMatrix>>(
      m, "CsrMatrix", "An immutable CSR matrix: a shared pattern and its values.")
      .def(py::init([](std::shared_ptr<CsrPattern> pattern, const DoubleArray& values) {
             auto v = span_of(values);
             return std::make_shared<CsrMatrix>(pattern, std::vector<double>(v.begin(), v.end()));
           }),
           py::arg("pattern"), py::arg("values"), "A matrix of `pattern` with a copy of `values`.")
      .def_static(
          "from_scipy", [](py::handle m) { return held(from_scipy(m)); }, py::arg("matrix"),
          "A copy of a SciPy sparse matrix (duplicates summed, columns sorted).")
      .def_property_readonly("shape", [](const CsrMatrix& a) { return py::make_tuple(a.rows(), a.cols()); })
      .def_property_readonly("nnz", &CsrMatrix::nnz)
      .def_property_readonly("pattern", [](const CsrMatrix& a) { return held(a.pattern_ptr()); })
      .def_property_readonly(
          "indptr", [](std::shared_ptr<CsrMatrix> a) { return readonly_view(a->pattern().row_offsets(), a); })
      .def_property_readonly(
          "indices",
          [](std::shared_ptr<CsrMatrix> a) { return readonly_view(a->pattern().col_indices(), a); })
      .def_property_readonly("data",
                             [](std::shared_ptr<CsrMatrix> a) { return readonly_view(a->values(), a); })
      .def(
          "with_values",
          [](const CsrMatrix& a, const DoubleArray& values) {
            auto v = span_of(values);
            return std::make_shared<CsrMatrix>(a.pattern_ptr(), std::vector<double>(v.begin(), v.end()));
          },
          py::arg("values"), "A new matrix of the same pattern object with a copy of `values`.")
      .def(
          "to_scipy",
          [](std::shared_ptr<CsrMatrix> a) {
            py::module_ sparse = py::module_::import("scipy.sparse");
            py::object data = readonly_view(a->values(), a),
                       indices = readonly_view(a->pattern().col_indices(), a),
                       indptr = readonly_view(a->pattern().row_offsets(), a);
            return sparse.attr("csr_matrix")(py::make_tuple(data, indices, indptr),
                                             py::arg("shape") = py::make_tuple(a->rows(), a->cols()),
                                             py::arg("copy") = false);
          },
          "A scipy.sparse.csr_matrix sharing the three arrays (read-only).")
      .def("__matmul__",
           [](const CsrMatrix& a, const DoubleArray& x) {
             std::vector<double> y(static_cast<std::size_t>(a.rows()));
             a.multiply(span_of(x), y);
             return to_numpy(std::move(y));
           })
      .def("multiply_transpose",
           [](const CsrMatrix& a, const DoubleArray& x) {
             std::vector<double> y(static_cast<std::size_t>(a.cols()));
             a.multiply_transpose(span_of(x), y);
             return to_numpy(std::move(y));
           })
      .def("__getitem__",
           [](const CsrMatrix& a, std::pair<std::int64_t, std::int64_t> ij) {
             if (ij.first < 0 || ij.first >= a.rows() || ij.second < 0 || ij.second >= a.cols())
               throw py::index_error(fmt::format("({}, {}) is outside the {}x{} matrix", ij.first, ij.second,
                                                 a.rows(), a.cols()));
             return a(static_cast<index_t>(ij.first), static_cast<index_t>(ij.second));
           })
      .def("norm_inf", &CsrMatrix::norm_inf)
      .def_property_readonly("bytes", &CsrMatrix::bytes)
      .def("__repr__", [](const CsrMatrix& a) {
        return fmt::format("<fem.CsrMatrix {}x{}, {} nonzeros>", a.rows(), a.cols(), a.nnz());
      });

  py::class_<Store, std::unique_ptr<Store, py::nodelete>> store(m, "Store", R"(The process-wide store.

Entries are immutable: put() copies arrays in (a fem.CsrMatrix or fem.Mesh is shared, being
immutable already); store[key] gives arrays as read-only numpy views without a copy, which keep
the value alive after an erase or a replace.)");
  store.def("__getitem__", [](const Store& s, const std::string& key) { return stored_value(s, key); })
      .def(
          "get",
          [](const Store& s, const std::string& key, py::object otherwise) {
            return s.contains(key) ? stored_value(s, key) : otherwise;
          },
          py::arg("key"), py::arg("default") = py::none())
      .def("__contains__", [](const Store& s, const std::string& key) { return s.contains(key); })
      .def(
          "put", [](Store& s, const std::string& key, py::handle value) { return put_value(s, key, value); },
          py::arg("key"), py::arg("value"), "Publish a copy of value under key; returns the new version.")
      .def("__setitem__",
           [](Store& s, const std::string& key, py::handle value) { put_value(s, key, value); })
      .def(
          "erase", [](Store& s, const std::string& key) { return without_gil([&] { return s.erase(key); }); },
          py::arg("key"), "Remove key and what was derived from it; False when it was absent.")
      .def("__delitem__",
           [](Store& s, const std::string& key) {
             if (!without_gil([&] { return s.erase(key); }))
               (void)s.version(key);  // raises KeyError naming the nearest keys
           })
      .def(
          "keys",
          [](const Store& s, const std::string& prefix) {
            std::vector<std::string> keys;
            for (const auto& e : s.list(prefix)) keys.push_back(e.key);
            return keys;
          },
          py::arg("prefix") = "")
      .def("__iter__",
           [](const Store& s) {
             py::list keys;
             for (const auto& e : s.list()) keys.append(e.key);
             return py::iter(keys);
           })
      .def("__len__", [](const Store& s) { return s.stats().entries; })
      .def("version", &Store::version, py::arg("key"))
      .def("type_of", &Store::type_of, py::arg("key"))
      .def(
          "info", [](const Store& s, const std::string& key) { return info_dict(s.info(key)); },
          py::arg("key"))
      .def(
          "list",
          [](const Store& s, const std::string& prefix) {
            py::list out;
            for (const auto& e : s.list(prefix)) out.append(info_dict(e));
            return out;
          },
          py::arg("prefix") = "")
      .def("counters", &Store::counters, "The kernels' named counters (solve.factorizations, ...).")
      .def("counter", &Store::counter, py::arg("name"))
      .def("stats",
           [](const Store& s) {
             const StoreStats t = s.stats();
             py::dict d;
             d["entries"] = t.entries, d["bytes"] = t.bytes, d["evictable_entries"] = t.evictable_entries;
             d["evictable_bytes"] = t.evictable_bytes, d["device_bytes"] = t.device_bytes,
             d["byte_budget"] = t.byte_budget;
             d["hits"] = t.hits, d["misses"] = t.misses, d["puts"] = t.puts,
             d["replacements"] = t.replacements;
             d["erases"] = t.erases, d["evictions"] = t.evictions, d["invalidations"] = t.invalidations;
             d["computes"] = t.computes;
             return d;
           })
      .def("reset_stats", &Store::reset_stats)
      .def("clear", [](Store& s) { without_gil([&] { s.clear(); }); })
      .def_property(
          "byte_budget", &Store::byte_budget,
          [](Store& s, std::size_t bytes) { without_gil([&] { s.set_byte_budget(bytes); }); },
          "Bytes the store may hold; cache entries are evicted beyond it.");
  m.attr("store") = py::cast(&fem::store(), py::return_value_policy::reference);
}

}  // namespace fem::python
