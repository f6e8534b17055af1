#!/usr/bin/env bash
# cmake --install puts everything in place, and the installed units pass systemd's checks:
# `systemd-analyze verify`, a `systemd-analyze security` exposure of at most 2.0, and the
# crash-loop settings (robustness item 48f) in place.
set -euo pipefail
build="$1"
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null

for f in bin/llmd bin/llmctl bin/llmd-mkmodel include/llmd/llmd.h include/llmd/client.h \
         include/llmd/llmd_engine.h \
         lib/systemd/system/llmd.service lib/systemd/system/llmd.socket \
         lib/sysusers.d/llmd.conf lib/tmpfiles.d/llmd.conf etc/llmd/llmd.toml share/doc/llmd/protocol.md; do
  [[ -e "$prefix/$f" ]] || { echo "packaging: $f was not installed" >&2; exit 1; }
done
ls "$prefix"/lib*/libllmd.so "$prefix"/lib*/libllmd_engine.so >/dev/null
grep -q "ExecStart=$prefix/bin/llmd --config $prefix/etc/llmd/llmd.toml" "$prefix/lib/systemd/system/llmd.service"

systemd-analyze verify "$prefix/lib/systemd/system/llmd.socket" "$prefix/lib/systemd/system/llmd.service"
rating=$(systemd-analyze security --offline=true --no-pager "$prefix/lib/systemd/system/llmd.service" | tail -1)
echo "packaging: $rating"
exposure=$(grep -oE '[0-9]+\.[0-9]+' <<<"$rating" | head -1)
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 2.0) }' || { echo "packaging: exposure $exposure is above 2.0" >&2; exit 1; }
# A crash loop: systemd restarts on failure and keeps the socket, whose trigger limit stops a
# tight loop of activations; clients queue on the socket meanwhile.
grep -q "^Restart=on-failure" "$prefix/lib/systemd/system/llmd.service"
grep -q "^TriggerLimitIntervalSec=" "$prefix/lib/systemd/system/llmd.socket"
grep -q "^TriggerLimitBurst=" "$prefix/lib/systemd/system/llmd.socket"
grep -q "^SocketMode=0660" "$prefix/lib/systemd/system/llmd.socket"
grep -q "^SocketUser=" "$prefix/lib/systemd/system/llmd.socket"
grep -q "^SocketGroup=" "$prefix/lib/systemd/system/llmd.socket"
echo "packaging: ok"
