#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Adds Backend.AI 23.09.11's own storage proxy to the real manager that
# shared/tools/real-manager/setup.sh assembled in $REALMGR_DIR (issue 44, item 5), so that
# tests/conformance/real_manager.py also runs folders, uploads, downloads and `bai cp`.
#
# Same way as the manager: the proxy's sources from the fetched lablup/backend.ai mirror (tag
# 23.09.11) copied into the merged PYTHONPATH tree, two more Debian packages (python3-zipstream
# for zipstream-new, python3-dataclasses-json for the GPFS client it imports), one vfs volume
# under $REALMGR_DIR/vfroot, its manager-facing API on 127.0.0.1:26022 and its client API on
# 127.0.0.1:26021 (plain HTTP), and the manager's etcd `volumes` key pointed at it; the manager
# is restarted to read it. Nothing here is committed from the fetched sources.
#
#   MIRROR_DIR=/work/.mirror REALMGR_DIR=/tmp/realmgr bash tests/conformance/real-storage-proxy.sh
#   stop: kill "$(cat "$REALMGR_DIR/pids/storage.pid")" (shared/tools/real-manager/stop.sh stops
#   the rest)
set -euo pipefail
R=${REALMGR_DIR:?set REALMGR_DIR to the scratch directory of the real manager}
M=${MIRROR_DIR:?set MIRROR_DIR to the folder holding the fetched mirrors (OWNER+NAME/repo)}
SHARED_TOOLS=${SHARED_TOOLS:-$(cd "$(dirname "$0")/../../../shared/tools/real-manager" 2>/dev/null && pwd || true)}
[ -d "$R/merged/ai/backend/manager" ] || { echo "no manager tree in $R/merged: run shared/tools/real-manager/setup.sh first" >&2; exit 1; }
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-zipstream python3-dataclasses-json >/dev/null

# The proxy's package, from the mirror (a bare repository or a checkout).
GD=$M/lablup+backend.ai/repo; [ -d "$GD/.git" ] && GD=$GD/.git
# (A partial mirror may print "invalid object" for a large web asset outside this path: harmless.)
rm -rf "$R/merged/ai/backend/storage"
git --git-dir="$GD" archive 23.09.11 src/ai/backend/storage | tar -x -C "$R/fsrc/lablup+backend.ai"
cp -r "$R/fsrc/lablup+backend.ai/src/ai/backend/storage" "$R/merged/ai/backend/"
rm -f "$R/merged/ai/backend/storage/VERSION"; echo 23.09.11 > "$R/merged/ai/backend/storage/VERSION"
mkdir -p "$R/merged/backend.ai_storage_proxy-23.09.11.dist-info"
printf 'Metadata-Version: 2.1\nName: backend.ai-storage-proxy\nVersion: 23.09.11\n' \
  > "$R/merged/backend.ai_storage_proxy-23.09.11.dist-info/METADATA"

# One vfs volume, marked with the current layout (else the proxy asks for a migration).
mkdir -p "$R/vfroot/volume1" "$R/work/storage"
[ -f "$R/vfroot/volume1/version.txt" ] || echo 3 > "$R/vfroot/volume1/version.txt"
W=$R/work/storage
git --git-dir="$GD" show 23.09.11:configs/storage-proxy/halfstack.toml > "$W/storage-proxy.toml"
sed -i "s/port = 2379 }/port = 22379 }/; s/num-proc = 4/num-proc = 1/; \
  s/host = \"0.0.0.0\", port = 6021 }/host = \"127.0.0.1\", port = 26021 }/; s/port = 6022 }/port = 26022 }/; \
  s/secret = \"some-secret-shared-with-manager\"/secret = \"some-secret-shared-with-storage-proxy\"/; \
  s/colored = true/colored = false/; s@^path = .*@path = \"$R/vfroot/volume1\"@; \
  s@^# ipc-base-path = .*@ipc-base-path = \"$R/work/ipc\"@" "$W/storage-proxy.toml"
grep -q 'port = 26021' "$W/storage-proxy.toml" && grep -q 'port = 26022' "$W/storage-proxy.toml" \
  || { echo "the proxy's sample configuration changed shape; adjust the sed above" >&2; exit 1; }

# The manager's view of it: local:volume1 through this proxy, over plain HTTP.
cat > "$W/volumes.json" <<EOF
{"_types": {"group": "", "user": ""}, "default_host": "local:volume1",
 "proxies": {"local": {"client_api": "http://127.0.0.1:26021", "manager_api": "http://127.0.0.1:26022",
                       "secret": "some-secret-shared-with-storage-proxy", "ssl_verify": "false"}},
 "exposed_volume_info": "percentage"}
EOF
(cd "$R/work" && PYTHONPATH="$R/merged" /usr/bin/python3 -P -c \
  'import sys; sys.argv[0]="backend.ai"; from ai.backend.cli.__main__ import main; main()' \
  mgr etcd put-json volumes "$W/volumes.json")

[ -f "$R/pids/storage.pid" ] && kill "$(cat "$R/pids/storage.pid")" 2>/dev/null && sleep 2
cd "$W"
PYTHONPATH="$R/merged" nohup /usr/bin/python3 -P -m ai.backend.storage.server -f storage-proxy.toml \
  > storage.out 2>&1 </dev/null &
echo $! > "$R/pids/storage.pid"
cd - >/dev/null
for i in $(seq 1 30); do curl -s -o /dev/null http://127.0.0.1:26021/ && break; sleep 1; done

# The manager reads the volumes key when it starts.
if [ -f "$R/pids/manager.pid" ]; then
  kill "$(cat "$R/pids/manager.pid")" 2>/dev/null || true
  sleep 3
fi
if [ -n "$SHARED_TOOLS" ] && [ -f "$SHARED_TOOLS/mgr-start.sh" ]; then
  REALMGR_DIR=$R bash "$SHARED_TOOLS/mgr-start.sh"
else
  echo "start the manager again (shared/tools/real-manager/mgr-start.sh) so it reads the volumes key" >&2
fi
echo "storage proxy 23.09.11: client API http://127.0.0.1:26021, log $W/storage.out"
