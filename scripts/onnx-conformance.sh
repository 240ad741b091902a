#!/usr/bin/env bash
# Runs every ONNX backend test model through Kiln and regenerates
# docs/onnx-conformance.md. Usage:
#   scripts/onnx-conformance.sh [BUILD_DIR] [CURRENT_TESTS_DIR] [REAL_MODELS_DIR]
# BUILD_DIR defaults to build/. REAL_MODELS_DIR, if given, is the cache
# test/models/real/real_models.py fetch filled (its models are checked and
# listed with their results). CURRENT_TESTS_DIR, if given, holds the
# current-node folder test/onnx/make_current_node_tests.py writes (from the
# onnx package on PyPI, in a virtual environment:
#   python3 -m venv /tmp/onnx-venv && /tmp/onnx-venv/bin/pip install onnx
#   /tmp/onnx-venv/bin/python test/onnx/make_current_node_tests.py DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
current=${2:-}
real=${3:-}
testdata=/usr/share/libonnx-testdata/data
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

folders=("$testdata/node" "$testdata/pytorch-operator"
         "$testdata/pytorch-converted" "$testdata/simple")
[ -n "$current" ] && folders+=("$current/current-node")
results=()
status=0
for folder in "${folders[@]}"; do
  name=$(basename "$folder")
  echo "onnx-conformance: $name"
  /usr/bin/python3 test/onnx/run_node_tests.py --bin-dir "$build/bin" \
      --data-dir "$folder" --results "$work/$name.json" | tail -2 || status=1
  results+=("$work/$name.json")
done
echo "onnx-conformance: node-dynamic"
/usr/bin/python3 test/onnx/run_node_tests.py --bin-dir "$build/bin" \
    --data-dir "$testdata/node" --dynamic \
    --results "$work/node-dynamic.json" | tail -2 || status=1
results+=("$work/node-dynamic.json")
real_args=()
if [ -n "$real" ]; then
  echo "onnx-conformance: real models"
  /usr/bin/python3 test/models/real/real_models.py check --cache "$real" \
      --bin-dir "$build/bin" --results "$work/real.json" | tail -1 || status=1
  real_args=(--real-models "$work/real.json")
fi
/usr/bin/python3 test/onnx/conformance_report.py \
    --output docs/onnx-conformance.md "${real_args[@]}" "${results[@]}"
echo "onnx-conformance: wrote docs/onnx-conformance.md"
exit $status
