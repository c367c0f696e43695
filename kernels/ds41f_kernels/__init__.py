"""ds41f_kernels: TileLang programs that qualify a node's GPU before the model serves on it.

``python -m ds41f_kernels qualify --json`` prints one JSON document (see qualify.py and verdict.py);
``warmup`` fills TileLang's JIT cache; ``lower`` prints CUDA source without a GPU.
"""

__version__ = "0.1.0"
