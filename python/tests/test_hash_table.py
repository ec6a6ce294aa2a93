"""fem.HashTable, the connectivity's hash table as an op (docs/hash_table.md): every op against
a dict on random batches with repeated and missing keys, on numpy arrays and PyTorch tensors
(through DLPack), on the host twin, the debug device and CUDA (skipped without a device); a
table made in Python is visible from C by its key and vice versa; the errors; the handle's
lifetime."""
import ctypes
import os

import numpy as np
import pytest

import fem


def random_keys(rng, n, universe, pairs):
    k = rng.integers(-universe // 2, universe // 2, size=n if not pairs else (n, 2), dtype=np.int64)
    k[(k == -1) | (k == -2)] = -3  # -1 is reserved (-1 and -2 as a pair's high half)
    return k


def cuda_or_skip(device, kind):
    if device != "cuda":
        return
    try:
        fem.HashTable("int64", "int64", device="cuda")
    except Exception as e:  # NotCompiled, or no device
        pytest.skip(f"no CUDA table here ({e}); scripts/gpu-check.sh runs these")
    if kind == "torch" and not pytest.importorskip("torch").cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("device", ["cpu", "debug-device", "cuda"])
@pytest.mark.parametrize("key_dtype", ["int32", "int64", "pair"])
@pytest.mark.parametrize("value_dtype", ["int32", "int64", "float64"])
def test_every_op_agrees_with_a_dict(kind, device, key_dtype, value_dtype):
    cuda_or_skip(device, kind)
    if kind == "torch":
        torch = pytest.importorskip("torch")
        where = "cuda" if device == "cuda" else "cpu"  # CUDA tensors on a CUDA table, in place
        to = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(where)  # noqa: E731
        back = lambda a: a.cpu().numpy()  # noqa: E731
    else:
        to = back = lambda a: a  # noqa: E731
    run_every_op(device, key_dtype, value_dtype, to, back)


def run_every_op(device, key_dtype, value_dtype, to, back):
    rng = np.random.default_rng(3)
    pairs = key_dtype == "pair"
    kd = np.int32 if key_dtype == "int32" else np.int64
    vd = {"int32": np.int32, "int64": np.int64, "float64": np.float64}[value_dtype]
    t = fem.HashTable(key_dtype, value_dtype, capacity=16, device=device)
    expected = {}
    for _ in range(3):
        keys = random_keys(rng, 400, 600, pairs).astype(kd)
        values = (rng.integers(0, 10**6, size=len(keys)) / (4 if value_dtype == "float64" else 1)).astype(vd)
        t.insert(to(keys), to(values))
        for k, v in zip(map(lambda k: tuple(np.atleast_1d(k)), keys), values):
            expected[k] = v
        assert len(t) == len(expected)
    queries = random_keys(rng, 500, 1500, pairs).astype(kd)
    values, found = map(back, t.find(to(queries), fill=-7))
    for q, v, f in zip(map(lambda k: tuple(np.atleast_1d(k)), queries), values, found):
        assert f == (q in expected)
        assert v == (expected[q] if f else -7)
    out = (to(np.empty(len(queries), dtype=vd)), to(np.empty(len(queries), dtype=bool)))
    again = t.find(to(queries), fill=-7, out=out)
    assert again[0] is out[0] and np.array_equal(back(out[0]), values) and np.array_equal(back(again[1]), found)
    keys, values = t.export()
    assert len(keys) == len(expected)
    order = sorted(expected, key=lambda k: (k[1], k[0]) if pairs else k)
    assert [tuple(np.atleast_1d(k)) for k in keys] == order
    assert list(values) == [expected[k] for k in order]
    if value_dtype != "float64":
        u = fem.HashTable(key_dtype, value_dtype, device=device)
        keys = random_keys(rng, 300, 200, pairs).astype(kd)
        ids, is_new = map(back, u.insert_unique(to(keys)))
        first = {}
        for k, i, n in zip(map(lambda k: tuple(np.atleast_1d(k)), keys), ids, is_new):
            assert n == (k not in first)
            first.setdefault(k, len(first))
            assert i == first[k]


def test_pytorch_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    t = fem.HashTable("int64", "int32")
    ids, is_new = t.insert_unique(torch.tensor([5, 9, 5, 7]))
    assert isinstance(ids, torch.Tensor) and ids.tolist() == [0, 1, 0, 2] and is_new.tolist() == [True, True, False, True]
    values, found = t.find(torch.tensor([7, 8]))
    assert values.tolist()[0] == 2 and found.tolist() == [True, False]
    if torch.cuda.is_available():
        with pytest.raises(fem.InvalidArgument, match="cuda tensor"):
            t.find(torch.tensor([1], device="cuda"))


def test_a_table_is_a_store_entry_seen_from_c():
    if "FEM_GPU_LIBRARY" not in os.environ:
        pytest.skip("FEM_GPU_LIBRARY (libfem_gpu's path) is set by ctest")
    gpu = ctypes.CDLL(os.environ["FEM_GPU_LIBRARY"])  # the module's own copy: one store
    find = gpu.fem_table_find
    t = fem.HashTable("int64", "int64", key="py/table")
    t.insert(np.array([3, 4], dtype=np.int64), np.array([30, 40], dtype=np.int64))
    keys = (ctypes.c_int64 * 2)(4, 5)
    values = (ctypes.c_int64 * 2)(0, 0)
    found = (ctypes.c_uint8 * 2)(9, 9)
    assert find(b"py/table", keys, values, found, ctypes.c_int64(2)) == 0
    assert list(values) == [40, -1] and list(found) == [1, 0]  # all ones where absent
    # ... and a table made in C is opened in Python.
    assert gpu.fem_table_create(b"c/table", 2, 1, ctypes.c_int64(0), ctypes.c_double(0), 0) == 0
    c = fem.HashTable.open("c/table")
    assert (c.key_dtype, c.value_dtype) == ("int64", "int32")
    c.insert(np.array([1], dtype=np.int64), np.array([11], dtype=np.int32))
    n = ctypes.c_int64(0)
    assert gpu.fem_table_size(b"c/table", ctypes.byref(n)) == 0 and n.value == 1


def test_tensor_errors_name_what_is_wrong_and_change_nothing():
    torch = pytest.importorskip("torch")
    t = fem.HashTable("pair", "int64")
    with pytest.raises(fem.InvalidArgument, match="int32"):
        t.insert(torch.zeros((2, 2), dtype=torch.int32), torch.zeros(2, dtype=torch.int64))
    with pytest.raises(fem.InvalidArgument, match="contiguous"):
        t.insert(torch.zeros((2, 2), dtype=torch.int64).t(), torch.zeros(2, dtype=torch.int64))
    with pytest.raises(fem.InvalidArgument, match="dimensions"):
        t.find(torch.zeros(4, dtype=torch.int64))
    with pytest.raises(fem.InvalidArgument, match="reserved"):
        t.insert(torch.tensor([[1, 2], [3, -2]]), torch.tensor([1, 2]))
    assert len(t) == 0
    if torch.cuda.is_available():
        with pytest.raises(fem.InvalidArgument, match="cuda tensor"):
            fem.HashTable("int64", "int64", device="debug-device").find(torch.tensor([1], device="cuda"))


def test_errors_name_what_is_wrong_and_change_nothing():
    t = fem.HashTable("int64", "int32", key="errors/t")
    with pytest.raises(fem.InvalidArgument, match="float64"):
        t.insert(np.array([1.0]), np.array([1], dtype=np.int32))  # no silent cast of keys
    with pytest.raises(fem.InvalidArgument, match="reserved"):
        t.insert(np.array([2, -1], dtype=np.int64), np.array([1, 2], dtype=np.int32))
    assert len(t) == 0
    with pytest.raises(fem.InvalidArgument, match="key dtype"):
        fem.HashTable("uint8", "int32")
    with pytest.raises(fem.InvalidArgument, match="float64"):
        fem.HashTable("int64", "float64").insert_unique(np.array([1], dtype=np.int64))
    with pytest.raises(fem.InvalidArgument, match="shape"):
        fem.HashTable("pair", "int32").find(np.array([1, 2], dtype=np.int64))


def test_the_handle_outlives_its_entry_and_a_replacement_serves_later_opens():
    t = fem.HashTable("int64", "int64", key="life/t")
    t.insert(np.array([1], dtype=np.int64), np.array([10], dtype=np.int64))
    fem.store.erase("life/t")
    assert t.find(np.array([1], dtype=np.int64))[0][0] == 10  # still this holder's
    fem.HashTable("int64", "int64", key="life/t")
    assert len(fem.HashTable.open("life/t")) == 0 and len(t) == 1
    assert "fem::gpu::Table" in fem.store.info("life/t")["type"]
