"""Build script for the compiled parts: the chunking engine's native passes, and a guard
around tree-sitter grammars' external scanners (``_guard.c``).

Everything else about the package is in pyproject.toml. The extensions are optional:
where no C compiler is found, the install goes on and ``sdk.chunking`` uses its
pure-Python paths, which give the same results (without the guard, Ruby source whose
heredocs could overflow the scanner's state is chunked with prose rules instead).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sdk.chunking._kernels",
            sources=["sdk/chunking/_kernels.c"],
            depends=["sdk/chunking/_scan.h", "sdk/chunking/_prose.h"],
            py_limited_api=True,
            optional=True,
        ),
        Extension(
            "sdk.chunking._native",
            sources=["sdk/chunking/_native.c"],
            depends=["sdk/chunking/_scan.h", "sdk/chunking/_prose.h"],
            optional=True,
        ),
        Extension(
            "sdk.chunking._guard", sources=["sdk/chunking/_guard.c"], py_limited_api=True, optional=True
        ),
    ],
)
