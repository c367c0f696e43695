"""Importing TileLang creates its kernel cache folders: keep them in a temporary folder, not in $HOME.
The modules that import torch or TileLang at the top carry the `torch` marker (pytest.ini); a run that leaves that
marker out (-m "not torch", as .venv and the per-version checks do) does not import them at all, since only the
Python 3.11 venv has torch (make unit runs them there)."""

import atexit
import os
import shutil
import tempfile

import pytest

if "TILELANG_CACHE_DIR" not in os.environ:
    os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="ds41f-tilelang-")
    atexit.register(shutil.rmtree, os.environ["TILELANG_CACHE_DIR"], True)

NEEDS_TORCH = {"test_kernels_cli.py", "test_kernels_injection.py", "test_kernels_lowering.py"}


def pytest_ignore_collect(collection_path, config):
    if collection_path.name in NEEDS_TORCH and "not torch" in (config.option.markexpr or ""):
        return True
    return None


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in NEEDS_TORCH:
            item.add_marker(pytest.mark.torch)
