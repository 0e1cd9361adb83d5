"""tpudoctor: diagnostics and performance profiling for Cloud TPU workloads.

Importing this package stays cheap: no framework (TensorFlow, JAX) and no cloud client is
imported here, so ``tpudoctor --help`` starts fast.
"""

__version__ = "0.1.0"
