#!/usr/bin/env bash
# Regenerates crates/cli/startup-order.txt: the functions a fresh `braincode run "Say hello"`
# executes, in the order it first calls them, then those a multi-agent run adds. The release build links them next to each other
# (lld's --symbol-ordering-file, see crates/cli/build.rs), so a short run maps a few hundred
# KB of code instead of faulting pages in all over a 30 MB .text: peak RSS of a remote
# "Say hello" 22 MB -> 12 MB. Run it after a dependency update or a large change; names that
# no longer exist are skipped by the linker, so a stale list costs memory, never correctness.
#
# The list goes stale as code moves and dependencies change (their symbols are renamed):
# `--check` says how much of it the release binary still holds, and fails under 80% (a fresh
# list: ~90%, the rest are the C library's).
#
#   scripts/startup-order.sh        needs valgrind (callgrind) and python3
#   scripts/startup-order.sh --check
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--check" ]; then
  cargo build --release -p braincode-cli
  held=$(comm -12 <(nm target/release/braincode | awk '{print $NF}' | sort -u) \
    <(sort -u crates/cli/startup-order.txt) | wc -l)
  listed=$(sort -u crates/cli/startup-order.txt | wc -l)
  percent=$((held * 100 / listed))
  echo "startup-order.txt: $held of $listed functions are in the release binary ($percent%)"
  if [ "$percent" -lt 80 ]; then
    echo "startup-order.sh: the list is stale; run scripts/startup-order.sh to make it again" >&2
    exit 1
  fi
  exit 0
fi
command -v valgrind >/dev/null || { echo "startup-order.sh: valgrind is needed (apt install valgrind)" >&2; exit 1; }

cargo build --release -p braincode-cli
exe="$(pwd)/target/release/braincode"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# `bench hello` starts fresh `braincode run "Say hello"` processes against a scripted server of
# its own; callgrind follows them (one file per process, the runs told apart by their command).
valgrind --tool=callgrind --trace-children=yes --demangle=no \
  --callgrind-out-file="$out/cg.hello.%p" "$exe" bench hello --runs 2 >/dev/null
# Then what a multi-agent run adds (router, 4 workers, primary, review over HTTP): the child
# `bench overhead` starts to measure a run process.
valgrind --tool=callgrind --trace-children=yes --demangle=no \
  --callgrind-out-file="$out/cg.team.%p" "$exe" bench overhead --runs 1 --delay-ms 1 >/dev/null
python3 - "$exe" "$out" crates/cli/startup-order.txt <<'PY'
import glob, re, sys
exe, out, target = sys.argv[1:4]
order, seen = [], set()
paths = sorted(glob.glob(f"{out}/cg.hello.*")) + sorted(glob.glob(f"{out}/cg.team.*"))
for path in paths:
    lines = open(path, errors="replace").read().splitlines()
    cmd = next((l for l in lines if l.startswith("cmd:")), "")
    if " run " not in cmd and "--rss-child" not in cmd:
        continue  # a bench process itself (its scripted server), or a helper it started
    # Every function name the run executed, in first-call order. The linker places those the
    # binary defines and skips the others (libc's, libstdc++'s): no need to tell them apart.
    for line in lines:
        m = re.match(r"^c?fn=\((\d+)\) (.+)$", line)
        if m and m.group(2) not in seen and re.match(r"^[A-Za-z_][\w.$]*$", m.group(2)):
            seen.add(m.group(2))
            order.append(m.group(2))
if not order:
    sys.exit("startup-order.sh: callgrind saw no `braincode run` process")
with open(target, "w") as f:
    f.write("".join(name + "\n" for name in order))
print(f"{target}: {len(order)} functions")
PY
