#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the benchmarks need. Idempotent and
# non-interactive: when everything is present it installs nothing and needs no root.
#
# The list lives here only. Boost comes as libboost1.81-dev (never the default 1.74 metapackages,
# which would conflict).
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ccache
  clang clang-format libclang-rt-14-dev
  # libbai and the CLI
  libcurl4-openssl-dev libwebsockets-dev libssl-dev libsodium-dev nlohmann-json3-dev
  libcli11-dev libtomlplusplus-dev
  # reference server
  libboost1.81-dev libsqlite3-dev uuid-dev libjemalloc-dev libarchive-dev libyaml-dev
  libspdlog-dev
  # the manager's PostgreSQL backend; the server for its tests (a throwaway cluster each run)
  libpq-dev postgresql-15
  # the agent's runc backend and the built-in python image (its /etc gets the host's CA bundle)
  runc tar python3 ca-certificates
  # the built-in python image's jupyter app (its /usr is the host's)
  jupyter-notebook
  # bridge networking (bai-agent --network bridge): ip, nft; nsenter and unshare for its test
  iproute2 nftables util-linux
  # tests and benchmarks (the bench scripts call curl and bc)
  libgtest-dev libgmock-dev libbenchmark-dev hyperfine wrk umoci curl bc
  # registry images (issue 46): a registry of the tests' own, skopeo to push into it, htpasswd
  docker-registry skopeo apache2-utils busybox-static
  # a Debian image for the slow registry test (tests/agent/debian_image_test.cc); the packages'
  # slow test boots a Debian tree with systemd-nspawn (tests/install/deb_nspawn.sh)
  debootstrap systemd-container dpkg-dev
  # terminal tests drive bai shell through tmux and script(1)
  tmux bsdutils
  # the web console: built with npm from its lockfile; its tests drive Chromium headless
  nodejs chromium
)
# Debian's npm, unless a nodejs that brings its own (NodeSource's) is installed.
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=sudo
  else
    echo "install-deps: missing packages and not root; run as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
