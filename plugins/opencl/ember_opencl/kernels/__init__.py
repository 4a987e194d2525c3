"""The OpenCL kernels of ember-opencl, one module per family; each has ``register(lib)``.

- ``copy``: copy_ (strided, casting) and fill_ - the runtime primitives;
- ``elementwise``: every elementwise primitive from one N-ary strided template;
- ``reduce``: sum, amax over any dims; ``linalg``: bmm (tiled GEMM);
- ``index``: gather, scatter_add; ``random``: uniform (Philox4x32-10).
"""
