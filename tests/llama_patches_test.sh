#!/usr/bin/env bash
# Fails unless every patch in patches/llama.cpp is applied in the llama.cpp tree being built
# (scripts/fetch-llama applies them; a patch that stopped applying fails there first).
#   llama_patches_test.sh LLAMA_SOURCE_DIR PATCH_DIR
set -euo pipefail
src=$1 dir=$(cd "$2" && pwd)
status=0
for p in "$dir"/*.patch; do
  if git -C "$src" apply --reverse --check "$p" 2>/dev/null; then
    echo "applied: $(basename "$p")"
  else
    echo "NOT applied in $src: $(basename "$p") (run scripts/fetch-llama)" >&2
    status=1
  fi
done
exit $status
