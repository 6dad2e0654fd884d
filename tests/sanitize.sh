#!/usr/bin/env bash
# make sanitize: the chunking engine's compiled parts (_native.c, _kernels.c, _guard.c) built with
# AddressSanitizer and UndefinedBehaviorSanitizer into a copy of the tree
# (build/sanitize/tree, so the working tree's builds are never touched), then the
# chunking suite and a bounded fuzzing run (tests/chunking/test_fuzz.py, for
# SEAM_FUZZ_SECONDS, default 120) against them. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$PWD/.venv/bin/python}
SUFFIX=$($PY -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
INCLUDE=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
TREE=build/sanitize/tree
rm -rf build/sanitize && mkdir -p "$TREE"
cp -r sdk tests corpora bench pyproject.toml "$TREE/"
find "$TREE" -name '*.so' -delete
find "$TREE" -name '__pycache__' -prune -exec rm -rf {} +
for m in _native _kernels _guard; do
    gcc -shared -fPIC -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
        -fno-omit-frame-pointer -I"$INCLUDE" "sdk/chunking/$m.c" -o "$TREE/sdk/chunking/$m$SUFFIX"
done
cd "$TREE"
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
# CPython's own allocator and interned objects are never freed at exit: leaks are not
# what this run looks for (the suite's memory tests bound them).
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export SEAM_SANITIZED=1 SEAM_FUZZ_SECONDS="${SEAM_FUZZ_SECONDS:-120}"
$PY -c 'import sdk.chunking._accel as a; assert a.native and a.kernels and a.guard and a.native.__file__.startswith("'"$PWD"'"); print("sanitized builds:", a.native.__file__)'
$PY -m pytest -q -p no:cacheprovider tests/chunking "$@"
