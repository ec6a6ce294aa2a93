"""The examples of examples/python run as a user runs them, and check their own results."""
import os
import runpy
import subprocess
import sys

import numpy as np

import pytest


def run(source_dir, name, *args):
    path = os.path.join(source_dir, "examples", "python", name)
    return subprocess.run([sys.executable, path, *args], check=True, capture_output=True, text=True,
                          cwd=source_dir).stdout


def test_heat(source_dir):
    out = run(source_dir, "heat.py")
    assert "1 factorization" in out, out


@pytest.mark.skipif(not os.environ.get("FEM_DRIVER"), reason="the fem driver was not built")
def test_heat_equals_the_driver_of_run_sh(source_dir, tmp_path, monkeypatch):
    """The example's final temperature is the last frame of what ./run.sh computes."""
    from test_kernels import vtu_point_data

    monkeypatch.chdir(source_dir)
    u = runpy.run_path(os.path.join(source_dir, "examples", "python", "heat.py"))["u"]
    subprocess.run([os.environ["FEM_DRIVER"], "heat", "meshes/plate_hole_v41.msh", "--dt", "0.01", "--steps", "50",
                    "--initial", "0", "--dirichlet", "hole=1", "--dirichlet", "left=0", "--dirichlet", "right=0",
                    "--quiet", "--output", str(tmp_path / "heat.pvd")], check=True)
    last = sorted(tmp_path.glob("heat_*.vtu"))[-1]
    driver = vtu_point_data(last, "u")
    assert driver.shape == u.shape and 0.1 < u.mean() < 0.9
    assert np.max(np.abs(driver - u)) <= 1e-12


def test_inverse(source_dir):
    pytest.importorskip("torch", reason="python3-torch is not installed (./scripts/install-deps.sh torch)")
    out = run(source_dir, "inverse.py", "--iterations", "100")
    assert "symbolic analyses: 1" in out, out
