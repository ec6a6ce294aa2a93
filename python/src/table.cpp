// fem.HashTable: the connectivity's hash table as an op (fem::gpu::Table, docs/hash_table.md)
// on numpy arrays, and on DLPack tensors (PyTorch's, CPU or CUDA: python/fem/__init__.py makes
// the capsules on the table's stream), which the table takes where they are, without a copy. A
// table is a store entry: made here and published, C finds it by key (fem/gpu/c_api.h), and one
// made in C is opened here.
#include "fem/gpu/table.hpp"

#include <dlpack/dlpack.h>
#include <pybind11/stl.h>

#include <string>

#include "common.hpp"

namespace fem::python {
namespace {

using gpu::Executor;
using gpu::Table;

py::dtype dtype_of(Table::Key k) {
  return k == Table::Key::i32 ? py::dtype::of<std::int32_t>() : py::dtype::of<std::int64_t>();
}
py::dtype dtype_of(Table::Value v) {
  return v == Table::Value::i32   ? py::dtype::of<std::int32_t>()
         : v == Table::Value::i64 ? py::dtype::of<std::int64_t>()
                                  : py::dtype::of<double>();
}

// A C-contiguous array of exactly the table's dtype (no silent cast: a wrong dtype is an error
// naming both), n keys long; pairs are (n, 2).
py::array checked(py::handle given, const py::dtype& dtype, bool pairs, const char* what, const Table& t) {
  if (!py::isinstance<py::array>(given))
    throw InvalidArgument(fmt::format("HashTable: {} must be a numpy array (or a PyTorch tensor), not {}",
                                      what, std::string(py::str(given.get_type().attr("__name__")))));
  auto a = py::reinterpret_borrow<py::array>(given);
  if (!a.dtype().is(dtype) && a.dtype().num() != dtype.num())
    throw InvalidArgument(fmt::format("HashTable: {} of dtype {}, the table's {} are {}", what,
                                      std::string(py::str(py::object(a.dtype()))), what,
                                      std::string(py::str(py::object(dtype)))));
  FEM_EXPECTS(pairs ? (a.ndim() == 2 && a.shape(1) == 2) : a.ndim() == 1,
              "HashTable: {} of shape {}, expected {} (a table of {} keys)", what,
              std::string(py::str(a.attr("shape"))), pairs ? "(n, 2)" : "(n,)", Table::name(t.key_type()));
  return py::array::ensure(a, py::array::c_style);
}

std::size_t rows(const py::array& a) { return a.ndim() == 0 ? 0 : static_cast<std::size_t>(a.shape(0)); }

py::array keys_in(const Table& t, py::handle keys) {
  return checked(keys, dtype_of(t.key_type()), t.key_type() == Table::Key::pair, "keys", t);
}

py::array new_keys(const Table& t, std::size_t n) {
  if (t.key_type() == Table::Key::pair)
    return py::array(dtype_of(t.key_type()), std::vector<py::ssize_t>{static_cast<py::ssize_t>(n), 2});
  return py::array(dtype_of(t.key_type()), std::vector<py::ssize_t>{static_cast<py::ssize_t>(n)});
}

Table::Key key_type(const std::string& name) {
  if (name == "int32") return Table::Key::i32;
  if (name == "int64") return Table::Key::i64;
  if (name == "pair" || name == "int64 pair") return Table::Key::pair;
  throw InvalidArgument(fmt::format("HashTable: key dtype '{}' is none of 'int32', 'int64', 'pair'", name));
}
Table::Value value_type(const std::string& name) {
  if (name == "int32") return Table::Value::i32;
  if (name == "int64") return Table::Value::i64;
  if (name == "float64") return Table::Value::f64;
  throw InvalidArgument(
      fmt::format("HashTable: value dtype '{}' is none of 'int32', 'int64', 'float64'", name));
}
gpu::Executor executor_of(const std::string& device) {
  if (device == "cpu") return gpu::Executor::host();
  if (device == "debug-device") return gpu::Executor::debug_device();
  if (device == "cuda") return gpu::Executor::cuda();
  throw InvalidArgument(
      fmt::format("HashTable: device '{}' is none of 'cpu', 'cuda', 'debug-device'", device));
}

std::string type_name(Table::Key k) { return k == Table::Key::pair ? "pair" : Table::name(k); }

// --- DLPack tensors ---------------------------------------------------------------------------

struct DlType {
  std::uint8_t code, bits;
  const char* name;
};
DlType dl_type(Table::Key k) {
  return k == Table::Key::i32 ? DlType{kDLInt, 32, "int32"} : DlType{kDLInt, 64, "int64"};
}
DlType dl_type(Table::Value v) {
  return v == Table::Value::i32   ? DlType{kDLInt, 32, "int32"}
         : v == Table::Value::i64 ? DlType{kDLInt, 64, "int64"}
                                  : DlType{kDLFloat, 64, "float64"};
}
const DlType dl_flags{kDLUInt, 8, "uint8"};

std::string dl_type_name(const DLDataType& t) {
  const char* code = t.code == kDLInt     ? "int"
                     : t.code == kDLUInt  ? "uint"
                     : t.code == kDLFloat ? "float"
                                          : "type";
  return fmt::format("{}{}", code, t.bits) + (t.lanes != 1 ? fmt::format("x{}", t.lanes) : "");
}

// The data of a DLPack capsule (not consumed: the capsule keeps the producer's tensor alive),
// checked against the table: dtype exactly, shape (n,) or (n, 2) for pairs, compact strides,
// on the CPU or on the table's CUDA device.
struct DlArray {
  void* data = nullptr;
  std::size_t rows = 0;
};

DlArray dl_array(const Table& t, const py::capsule& capsule, const DlType& want, bool pairs,
                 const char* what) {
  FEM_EXPECTS(std::string(capsule.name() ? capsule.name() : "") == "dltensor",
              "HashTable: {} is not an unused DLPack capsule ('dltensor')", what);
  const DLTensor& x = capsule.get_pointer<DLManagedTensor>()->dl_tensor;
  FEM_EXPECTS(x.dtype.code == want.code && x.dtype.bits == want.bits && x.dtype.lanes == 1,
              "HashTable: {} of dtype {}, the table's {} are {}", what, dl_type_name(x.dtype), what,
              want.name);
  const int ndim = pairs ? 2 : 1;
  FEM_EXPECTS(x.ndim == ndim && (!pairs || x.shape[1] == 2), "HashTable: {} of {} dimensions, expected {}",
              what, x.ndim, pairs ? "(n, 2)" : "(n,)");
  const bool compact = !x.strides || ((x.shape[0] <= 1 || x.strides[0] == (pairs ? 2 : 1)) &&
                                      (!pairs || x.strides[1] == 1 || x.shape[0] == 0));
  FEM_EXPECTS(compact, "HashTable: {} is not contiguous (call .contiguous() first)", what);
  const Executor& exec = t.executor();
  const int device = x.device.device_type;
  if (device == kDLCUDA || device == kDLCUDAManaged) {
    FEM_EXPECTS(
        exec.kind() == Executor::Kind::cuda,
        "HashTable: {} is a cuda tensor, given to a table on the {} (move it with .cpu(), or make the "
        "table with device='cuda')",
        what, exec.kind() == Executor::Kind::host ? "host" : "debug device");
    FEM_EXPECTS(x.device.device_id == exec.context().device(),
                "HashTable: {} is on cuda:{}, the table on cuda:{}", what, x.device.device_id,
                exec.context().device());
  } else {
    FEM_EXPECTS(device == kDLCPU || device == kDLCUDAHost,
                "HashTable: {} is on a device of DLPack type {}, neither the CPU nor CUDA", what, device);
  }
  return {static_cast<char*>(x.data) + x.byte_offset, static_cast<std::size_t>(x.shape[0])};
}

}  // namespace

void bind_table(py::module_& m) {
  py::class_<Table, std::shared_ptr<Table>>(m, "_Table")
      .def(py::init([](const std::string& key_dtype, const std::string& value_dtype, std::int64_t capacity,
                       double load_factor, const std::string& device) {
             FEM_EXPECTS(capacity >= 0, "HashTable: capacity {} is negative", capacity);
             return std::make_shared<Table>(executor_of(device), key_type(key_dtype), value_type(value_dtype),
                                            static_cast<std::size_t>(capacity), load_factor);
           }),
           py::arg("key_dtype"), py::arg("value_dtype"), py::arg("capacity") = 0,
           py::arg("load_factor") = 0.5, py::arg("device") = "cpu")
      .def_static(
          "_open",
          [](const std::string& key) {
            // The store holds const handles; the table inside is the handle's mutable state.
            return std::const_pointer_cast<Table>(store().get<Table>(key));
          },
          py::arg("key"))
      .def(
          "publish",
          [](std::shared_ptr<Table> t, const std::string& key) {
            store().put(key, std::shared_ptr<const Table>(t));
          },
          py::arg("key"), "Publish the table under `key` (C and other holders find it there).")
      .def_property_readonly("key_dtype", [](const Table& t) { return type_name(t.key_type()); })
      .def_property_readonly("value_dtype", [](const Table& t) { return Table::name(t.value_type()); })
      .def_property_readonly("capacity", &Table::capacity)
      .def_property_readonly("bytes", &Table::bytes)
      .def("__len__", &Table::size)
      .def(
          "insert",
          [](const Table& t, py::handle keys, py::handle values) {
            const py::array k = keys_in(t, keys);
            const py::array v = checked(values, dtype_of(t.value_type()), false, "values", t);
            FEM_EXPECTS(rows(k) == rows(v), "HashTable.insert: {} keys, {} values", rows(k), rows(v));
            py::gil_scoped_release release;
            t.insert(k.data(), v.data(), rows(k));
          },
          py::arg("keys"), py::arg("values"), "Insert or assign keys[i] -> values[i].")
      .def(
          "insert_unique",
          [](const Table& t, py::handle keys) {
            const py::array k = keys_in(t, keys);
            py::array ids(dtype_of(t.value_type()),
                          std::vector<py::ssize_t>{static_cast<py::ssize_t>(rows(k))});
            py::array_t<bool> is_new(static_cast<py::ssize_t>(rows(k)));
            {
              py::gil_scoped_release release;
              t.insert_unique(k.data(), ids.mutable_data(),
                              reinterpret_cast<std::uint8_t*>(is_new.mutable_data()), rows(k));
            }
            return py::make_tuple(ids, is_new);
          },
          py::arg("keys"), "(ids, is_new): new keys numbered len(table), ... in order of first occurrence.")
      .def(
          "find",
          [](const Table& t, py::handle keys, py::object fill, py::object out) {
            const py::array k = keys_in(t, keys);
            py::array values;
            py::array_t<bool> found;
            if (out.is_none()) {
              values = py::array(dtype_of(t.value_type()),
                                 std::vector<py::ssize_t>{static_cast<py::ssize_t>(rows(k))});
              found = py::array_t<bool>(static_cast<py::ssize_t>(rows(k)));
            } else {  // the caller's arrays, reused batch after batch (no allocation, no page faults)
              const auto pair = out.cast<py::tuple>();
              FEM_EXPECTS(pair.size() == 2, "HashTable.find: out is (values, found)");
              values = checked(pair[0], dtype_of(t.value_type()), false, "out values", t);
              FEM_EXPECTS(
                  py::isinstance<py::array_t<bool>>(pair[1]) &&
                      py::reinterpret_borrow<py::array>(pair[1]).dtype().num() == py::dtype::of<bool>().num(),
                  "HashTable.find: out found must be a bool array");
              found = py::reinterpret_borrow<py::array_t<bool>>(pair[1]);
              FEM_EXPECTS(rows(values) == rows(k) && rows(found) == rows(k) && values.writeable() &&
                              found.writeable() && (values.flags() & py::array::c_style) &&
                              (found.flags() & py::array::c_style),
                          "HashTable.find: out arrays must be writable, contiguous and {} long", rows(k));
            }
            {
              py::gil_scoped_release release;
              t.find(k.data(), values.mutable_data(), reinterpret_cast<std::uint8_t*>(found.mutable_data()),
                     rows(k));
            }
            // A missing key's value: all ones from the table, `fill` here.
            if (!fill.is_none()) values[py::module_::import("numpy").attr("logical_not")(found)] = fill;
            return py::make_tuple(values, found);
          },
          py::arg("keys"), py::arg("fill") = 0, py::arg("out") = py::none(),
          "(values, found); a missing key's value is `fill` (None: all ones). out=(values, found) "
          "reuses the caller's arrays.")
      // The DLPack forms: every array a capsule the caller made (outputs too), on the CPU or the
      // table's device; the table takes them where they are.
      .def_property_readonly(
          "stream",
          [](const Table& t) { return reinterpret_cast<std::uintptr_t>(t.executor().context().stream()); },
          "The table's CUDA stream (a cudaStream_t as an int; 0 on the host), for DLPack's stream=")
      .def(
          "insert_dl",
          [](const Table& t, const py::capsule& keys, const py::capsule& values) {
            const auto k = dl_array(t, keys, dl_type(t.key_type()), t.key_type() == Table::Key::pair, "keys");
            const auto v = dl_array(t, values, dl_type(t.value_type()), false, "values");
            FEM_EXPECTS(k.rows == v.rows, "HashTable.insert: {} keys, {} values", k.rows, v.rows);
            py::gil_scoped_release release;
            t.insert(k.data, v.data, k.rows);
          },
          py::arg("keys"), py::arg("values"))
      .def(
          "insert_unique_dl",
          [](const Table& t, const py::capsule& keys, const py::capsule& ids, const py::capsule& is_new) {
            const auto k = dl_array(t, keys, dl_type(t.key_type()), t.key_type() == Table::Key::pair, "keys");
            const auto i = dl_array(t, ids, dl_type(t.value_type()), false, "ids");
            const auto f = dl_array(t, is_new, dl_flags, false, "is_new");
            FEM_EXPECTS(i.rows == k.rows && f.rows == k.rows,
                        "HashTable.insert_unique: {} keys, room for {} ids", k.rows,
                        std::min(i.rows, f.rows));
            py::gil_scoped_release release;
            t.insert_unique(k.data, i.data, static_cast<std::uint8_t*>(f.data), k.rows);
          },
          py::arg("keys"), py::arg("ids"), py::arg("is_new"))
      .def(
          "find_dl",
          [](const Table& t, const py::capsule& keys, const py::capsule& values, const py::capsule& found) {
            const auto k = dl_array(t, keys, dl_type(t.key_type()), t.key_type() == Table::Key::pair, "keys");
            const auto v = dl_array(t, values, dl_type(t.value_type()), false, "out values");
            const auto f = dl_array(t, found, dl_flags, false, "out found");
            FEM_EXPECTS(v.rows == k.rows && f.rows == k.rows, "HashTable.find: {} keys, room for {} values",
                        k.rows, std::min(v.rows, f.rows));
            py::gil_scoped_release release;
            t.find(k.data, v.data, static_cast<std::uint8_t*>(f.data), k.rows);
          },
          py::arg("keys"), py::arg("values"), py::arg("found"))
      .def(
          "export",
          [](const Table& t) {
            std::size_t n = t.size();
            for (;;) {  // another holder may insert meanwhile: retry with the size it reports
              py::array k = new_keys(t, n);
              py::array v(dtype_of(t.value_type()), std::vector<py::ssize_t>{static_cast<py::ssize_t>(n)});
              const std::size_t got = t.export_entries(k.mutable_data(), v.mutable_data(), n);
              if (got <= n) {
                if (got < n) return py::make_tuple(k[py::slice(0, got, 1)], v[py::slice(0, got, 1)]);
                return py::make_tuple(k, v);
              }
              n = got;
            }
          },
          "(keys, values) of every entry, sorted by key (pairs: by the second column, then the first).");
}

}  // namespace fem::python
