"""The examples of examples/python run as a user runs them, and check their own results."""
import os
import subprocess
import sys

import pytest


def run(source_dir, name, *args):
    path = os.path.join(source_dir, "examples", "python", name)
    return subprocess.run([sys.executable, path, *args], check=True, capture_output=True, text=True,
                          cwd=source_dir).stdout


def test_heat(source_dir):
    out = run(source_dir, "heat.py")
    assert "1 factorization" in out, out


def test_inverse(source_dir):
    pytest.importorskip("torch", reason="python3-torch is not installed (./scripts/install-deps.sh torch)")
    out = run(source_dir, "inverse.py", "--iterations", "100")
    assert "symbolic analyses: 1" in out, out
