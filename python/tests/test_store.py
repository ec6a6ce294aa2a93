"""fem.store: zero-copy read-only views that outlive their entry, copies in, SciPy sharing,
versions, counters, errors, and the same store as the C ABI."""
import ctypes
import gc
import os

import numpy as np
import pytest
import scipy.sparse as sp

import fem


def test_array_round_trip_and_view_without_copy():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    v1 = fem.store.put("x", a)
    a[0, 0] = 99  # put copied: the entry does not change
    x = fem.store["x"]
    assert x.shape == (3, 4) and x.dtype == np.float64
    assert x[0, 0] == 0 and np.array_equal(x[1:], a[1:])
    assert np.shares_memory(x, fem.store["x"])  # two reads, one buffer: no copy
    assert not x.flags.writeable
    with pytest.raises(ValueError):
        x[0, 0] = 1
    assert fem.store.version("x") == v1
    v2 = fem.store.put("x", np.zeros(2))
    assert v2 > v1


def test_view_keeps_the_value_alive_after_erase():
    fem.store.put("x", np.full(1000, 7.0))
    x = fem.store["x"]
    assert fem.store.erase("x")
    assert "x" not in fem.store
    gc.collect()
    for i in range(20):  # freed memory would be handed out again here
        fem.store.put(f"other/{i}", np.full(1000, -1.0))
    assert x.sum() == 7000.0  # the view's capsule still holds the value
    for i in range(20):
        fem.store.erase(f"other/{i}")
    before = fem.store.stats()["bytes"]
    assert before == 0


def test_integer_dtypes():
    fem.store.put("i32", np.arange(5, dtype=np.int32))
    fem.store.put("i64", np.arange(5, dtype=np.int64))
    assert fem.store["i32"].dtype == np.int32
    assert fem.store["i64"].dtype == np.int64
    assert fem.store.info("i32")["type"] == "fem::Array<i32>"
    with pytest.raises(fem.InvalidArgument):
        fem.store.put("c", np.ones(3, dtype=np.complex128))


def test_missing_key_names_the_nearest_keys():
    fem.store.put("mesh/square", np.zeros(1))
    with pytest.raises(fem.KeyError) as e:
        fem.store["mesh/sqare"]
    assert "mesh/square" in str(e.value)
    assert isinstance(e.value, KeyError) and isinstance(e.value, fem.Error)
    with pytest.raises(KeyError):
        del fem.store["nothing"]
    assert fem.store.get("nothing", 3) == 3


def test_invalid_key():
    with pytest.raises(fem.InvalidKey):
        fem.store.put("has space", np.zeros(1))
    with pytest.raises(ValueError):
        fem.store.put("", np.zeros(1))


def test_scipy_matrix_in_and_out_sharing_the_arrays():
    rng = np.random.default_rng(1)
    S = sp.random(50, 50, density=0.1, random_state=2, format="coo") + sp.eye(50)
    fem.store.put("A", S)
    A = fem.store["A"]
    assert isinstance(A, fem.CsrMatrix) and A.shape == (50, 50)
    ref = S.tocsr()
    ref.sum_duplicates()
    ref.sort_indices()
    assert np.array_equal(A.indptr, ref.indptr) and np.array_equal(A.indices, ref.indices)
    assert np.allclose(A.data, ref.data)
    assert A.indices.dtype == np.int32
    C = A.to_scipy()
    assert np.shares_memory(C.data, A.data) and np.shares_memory(C.indices, A.indices)
    assert np.shares_memory(C.indptr, A.indptr)
    x = rng.standard_normal(50)
    assert np.allclose(C @ x, ref @ x) and np.allclose(A @ x, ref @ x)
    with pytest.raises(ValueError):
        C.data[0] = 1.0
    # A fem.CsrMatrix is immutable: put shares it instead of copying.
    fem.store.put("B", A)
    assert np.shares_memory(fem.store["B"].data, A.data)


def test_matrix_views_survive_a_replace():
    fem.store.put("A", sp.eye(4, format="csr") * 2.0)
    data = fem.store["A"].data
    fem.store.put("A", sp.eye(4, format="csr") * 3.0)
    assert np.all(data == 2.0) and np.all(fem.store["A"].data == 3.0)


def test_counters_stats_budget():
    fem.store.put("x", np.zeros(10))
    fem.store["x"]
    s = fem.store.stats()
    assert s["entries"] == 1 and s["puts"] == 1 and s["hits"] >= 1 and s["bytes"] >= 80
    fem.store.byte_budget = 1 << 20
    assert fem.store.byte_budget == 1 << 20
    assert isinstance(fem.store.counters(), dict)
    assert fem.store.keys() == ["x"] and list(fem.store) == ["x"] and len(fem.store) == 1


def test_ctypes_user_sees_the_same_store():
    lib = ctypes.CDLL(os.environ["FEM_SHARED_LIBRARY"])
    lib.fem_get_f64.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_double), ctypes.c_int64]
    lib.fem_put_f64.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_double), ctypes.c_int32,
                                ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_uint64)]
    lib.fem_last_error.restype = ctypes.c_char_p
    fem.store.put("shared/x", np.array([1.0, 2.0, 3.0]))
    out = (ctypes.c_double * 3)()
    assert lib.fem_get_f64(b"shared/x", out, 3) == 0
    assert list(out) == [1.0, 2.0, 3.0]
    # ...and the module sees what the C ABI puts.
    values = (ctypes.c_double * 2)(4.0, 5.0)
    shape = (ctypes.c_int64 * 1)(2)
    assert lib.fem_put_f64(b"shared/y", values, 1, shape, None) == 0
    assert list(fem.store["shared/y"]) == [4.0, 5.0]
    assert lib.fem_get_f64(b"shared/none", out, 3) == 1  # FEM_ERR_NOT_FOUND
    assert b"shared/none" in lib.fem_last_error()


def test_mesh_entry_and_views_without_copy():
    m = fem.generate_mesh("gen:square-tri3:4", "mesh")
    assert fem.store.type_of("mesh") == "fem::Mesh"
    again = fem.store["mesh"]
    assert np.shares_memory(m.coordinates, again.coordinates)
    assert m.coordinates.shape == (25, 2) and m.cells.shape == (32, 3)
    assert not m.cells.flags.writeable
