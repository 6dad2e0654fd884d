"""Build script for the one compiled part: the chunking engine's native passes.

Everything else about the package is in pyproject.toml. The extension is optional: where
no C compiler is found, the install goes on and ``sdk.chunking`` uses its pure-Python
paths, which give the same results.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("sdk.chunking._native", sources=["sdk/chunking/_native.c"], optional=True),
    ],
)
