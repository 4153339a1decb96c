#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README on a fresh Debian 12, on this machine (root; needs debootstrap and network access to
# Debian's mirror): a minimal bookworm tree is made, becomes the root of its own mount namespace
# (a chroot is not enough: runc's pivot_root needs a real root), gets only `make` and `git`, clones
# this repository and runs the given make targets there (default: test), as a new user would.
#
#   sudo bash scripts/fresh-debian.sh [DIR] [TARGET…]     e.g. scripts/fresh-debian.sh /srv/fresh test bench
#
# The tree is kept (DIR, default /srv/fresh) so a second run reuses it; remove it to start over.
set -euo pipefail
[[ $(id -u) -eq 0 ]] || { echo "fresh-debian: needs root" >&2; exit 1; }
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/srv/fresh}
shift || true
targets=${*:-test}
command -v debootstrap >/dev/null || { apt-get update && apt-get install -y debootstrap; }
if [[ ! -x $dir/usr/bin/apt-get ]]; then
  debootstrap --variant=minbase bookworm "$dir" http://deb.debian.org/debian
fi
cp /etc/resolv.conf "$dir/etc/resolv.conf"
mkdir -p "$dir/src"
# Inside a new mount namespace: the tree with /proc, /sys, /dev and the repository (read-only)
# becomes the root; then the README's steps.
unshare --mount --fork bash -s "$dir" "$repo" "$targets" <<'INNER'
set -euo pipefail
dir=$1 repo=$2 targets=$3
mount --make-rprivate /
mount --rbind "$dir" "$dir"
mount -t proc proc "$dir/proc"
mount --rbind /sys "$dir/sys"
mount --rbind /dev "$dir/dev"
mount --bind -o ro "$repo" "$dir/src"
cd "$dir"
mkdir -p .oldroot
pivot_root . .oldroot
cd /
umount -l /.oldroot
export DEBIAN_FRONTEND=noninteractive HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
apt-get update && apt-get install -y make git
git config --global --add safe.directory '*'
rm -rf /root/bai && git clone -q /src /root/bai && cd /root/bai
for t in $targets; do
  echo "=== make $t"
  make "$t"
done
INNER
