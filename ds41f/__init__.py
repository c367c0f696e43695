"""ds41f: the controller-side command of the dgxspark.ds41f collection."""

__version__ = "0.1.0"
