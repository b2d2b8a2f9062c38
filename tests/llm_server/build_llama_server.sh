#!/usr/bin/env bash
# Builds llama.cpp's llama-server (CPU only, static) from the llama.cpp sources vendored in
# the PyPI sdist of llama-cpp-python, and caches the binary outside the repository.
#
#   bash tests/llm_server/build_llama_server.sh        # prints the binary's path
#
# The binary goes to ${AGENTCORE_LLAMA_CACHE:-~/.cache/agentcore-fx}/llama-server-<version>;
# nothing is done when it is already there. Needs cmake, a C++ compiler and pip (PyPI only).
# Exits non-zero with a reason on stderr when the build is impossible; the pytest suite
# tests/llm_server reports that reason (it reads the same path and a .failed note beside it).
set -euo pipefail

VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${AGENTCORE_LLAMA_CACHE:-$HOME/.cache/agentcore-fx}"
BIN="$CACHE/llama-server-$VERSION"
FAILED="$BIN.failed"
JOBS="${LLAMA_BUILD_JOBS:-2}"

if [ -x "$BIN" ]; then
    echo "$BIN"
    exit 0
fi
mkdir -p "$CACHE"
rm -f "$FAILED"
fail() {
    echo "llama-server build failed: $*" >&2
    echo "$*" >"$FAILED"
    exit 1
}
for tool in cmake c++; do
    command -v "$tool" >/dev/null 2>&1 || fail "'$tool' is not on PATH"
done
PY="${PYTHON:-python3}"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/llama-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
echo "downloading the llama-cpp-python==$VERSION sdist ..." >&2
"$PY" -m pip download --quiet --no-binary :all: --no-deps \
    -d "$WORK" "llama-cpp-python==$VERSION" >&2 \
    || fail "pip could not download the llama-cpp-python==$VERSION sdist"
SDIST="$(ls "$WORK"/llama_cpp_python-*.tar.gz 2>/dev/null | head -1)"
[ -n "$SDIST" ] || fail "no sdist in $WORK after pip download"
tar -xzf "$SDIST" -C "$WORK"
SRC="$(ls -d "$WORK"/llama_cpp_python-*/vendor/llama.cpp | head -1)"
[ -f "$SRC/CMakeLists.txt" ] || fail "the sdist has no vendor/llama.cpp"

echo "building llama-server from $SRC with -j$JOBS (4-6 min on 2 cores) ..." >&2
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_OPENMP=OFF -DGGML_NATIVE=OFF >"$WORK/cmake.log" 2>&1 \
    || { tail -30 "$WORK/cmake.log" >&2; fail "cmake configure failed (see output above)"; }
cmake --build "$WORK/build" --target llama-server -j "$JOBS" >"$WORK/build.log" 2>&1 \
    || { tail -30 "$WORK/build.log" >&2; fail "cmake build of llama-server failed (see output above)"; }
OUT="$(find "$WORK/build" -type f -name llama-server -perm -u+x | head -1)"
[ -n "$OUT" ] || fail "the build produced no llama-server binary"
"$OUT" --version >/dev/null 2>&1 || fail "the built llama-server does not run ($OUT --version)"
cp "$OUT" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
rm -f "$FAILED"
echo "$BIN"
