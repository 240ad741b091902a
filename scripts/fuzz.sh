#!/usr/bin/env bash
# Runs one of Kiln's libFuzzer targets for a given time.
#
#   scripts/fuzz.sh BUILD_DIR TARGET SECONDS [libFuzzer flags...]
#
# TARGET is fuzz-descriptor, fuzz-tensor-file or fuzz-external-data (every
# build), or fuzz-import or fuzz-import-model (a KILN_SANITIZE build, e.g.
# `cmake --preset sanitize`). The corpus grows in BUILD_DIR/fuzz/corpus/
# TARGET, seeded from libonnx-testdata's models and tensors; inputs that
# crash, leak or time out land in BUILD_DIR/fuzz/findings/TARGET (copy each
# into test/fuzz/regressions/TARGET once fixed). The last lines printed
# give executions, coverage and corpus size.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 BUILD_DIR TARGET SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
target=$2
seconds=$3
shift 3
binary="$build/fuzz/$target"
if [ ! -x "$binary" ]; then
  echo "$0: no $binary: build the target first" >&2
  exit 1
fi
testdata=/usr/share/libonnx-testdata/data
corpus="$build/fuzz/corpus/$target"
seeds="$build/fuzz/seeds/$target"
findings="$build/fuzz/findings/$target"
mkdir -p "$corpus" "$seeds" "$findings"
here=$(cd "$(dirname "$0")/.." && pwd)
regressions="$here/test/fuzz/regressions/$target"

# Seeds: small files of the kind the target reads, named by their test.
if [ -z "$(ls -A "$seeds")" ]; then
  case $target in
    fuzz-tensor-file) pattern='*.pb' ;;
    fuzz-import|fuzz-import-model) pattern='model.onnx' ;;
    *) pattern='' ;;
  esac
  if [ -n "$pattern" ]; then
    count=0
    while read -r file && [ $count -lt 2000 ]; do
      rel=${file#"$testdata/node/"}
      cp "$file" "$seeds/${rel//\//_}"
      count=$((count + 1))
    done < <(find "$testdata/node" -name "$pattern" -size -64k | sort)
  fi
fi

extra=()
case $target in
  fuzz-import|fuzz-import-model) extra=(-max_len=65536 -timeout=30) ;;
  *) extra=(-max_len=4096 -timeout=10) ;;
esac
exec "$binary" -max_total_time="$seconds" -rss_limit_mb=4096 \
  -artifact_prefix="$findings/" -print_final_stats=1 "${extra[@]}" "$@" \
  "$corpus" "$seeds" "$regressions"
