"""Importing TileLang creates its kernel cache folders: keep them in a temporary folder, not in $HOME."""

import atexit
import os
import shutil
import tempfile

if "TILELANG_CACHE_DIR" not in os.environ:
    os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="ds41f-tilelang-")
    atexit.register(shutil.rmtree, os.environ["TILELANG_CACHE_DIR"], True)
