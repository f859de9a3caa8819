#!/usr/bin/env bash
# Checks on real projects nobody here wrote: each one fetched from its registry with the
# registry's ordinary client (a crate's `.crate` from static.crates.io, a PyPI sdist with
# `pip download`, an npm tarball with `npm pack`), unpacked into a git repository, trusted, then
# `braincode checks run --all --json` three times: without dependencies, with `--fetch-deps`
# (first: the dependency step runs), and with `--fetch-deps` again (second: nothing fetched).
# Prints a Markdown table: the checks selected, the dependency step's time on each pass, the
# outcome of each pass, and whether the outcome class is right (without dependencies a check
# may pass or "could not run", never "failed" for an environment cause).
#
# Needs the network to the package registries (not a test: run it by hand).
# Usage: scripts/measure-checks.sh [WORKDIR]   (default: /var/tmp/braincode-measure)
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-/var/tmp/braincode-measure}"
braincode="${BRAINCODE_BIN:-$here/target/release/braincode}"
[ -x "$braincode" ] || braincode="$here/target/debug/braincode"
[ -x "$braincode" ] || { echo "build braincode first (cargo build --release)" >&2; exit 2; }

crates=(similar@2.6.0 either@1.13.0 fastrand@2.1.1 memchr@2.7.4 smallvec@1.13.2)
sdists=(attrs==25.3.0 iniconfig==2.0.0 packaging==24.1)
npms=(left-pad@1.3.0 ms@2.1.3)

rm -rf "$work" && mkdir -p "$work/src" "$work/home" "$work/cargo-home"
export BRAINCODE_HOME="$work/home"
# A cargo home of its own: "without dependencies" must mean an empty registry cache.
export CARGO_HOME="$work/cargo-home"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export PATH="$HOME/.cargo/bin:$PATH"

fetch_crate() { # name@version -> dir
  local name="${1%@*}" version="${1#*@}"
  curl -sSfL "https://static.crates.io/crates/$name/$name-$version.crate" | tar xz -C "$work/src"
  echo "$work/src/$name-$version"
}
fetch_sdist() { # name==version -> dir
  local spec="$1" name="${1%==*}" version="${1#*==}"
  python3 -m pip download -q --no-deps --no-binary :all: -d "$work/dl" "$spec"
  tar xzf "$work/dl/$name-$version.tar.gz" -C "$work/src"
  echo "$work/src/$name-$version"
}
fetch_npm() { # name@version -> dir
  local spec="$1" name="${1%@*}"
  (cd "$work/dl" && npm pack -q "$spec" >/dev/null)
  mkdir -p "$work/src/$spec" && tar xzf "$work/dl/$name-"*.tgz -C "$work/src/$spec" --strip-components=1
  rm -f "$work/dl/$name-"*.tgz
  echo "$work/src/$spec"
}

# One pass, tab-separated: outcome, dependency step seconds, checks run, why any could not run.
pass() { # dir [flags]
  local dir="$1"; shift
  local out
  out="$(cd "$dir" && "$braincode" checks run --all --json "$@" 2>/dev/null || true)"
  python3 - "$out" <<'PY'
import json, sys
try:
    s = json.loads(sys.argv[1])
except Exception:
    print("error\t-\t-\t-"); sys.exit()
setup = sum(r.get("durationMs", 0) for r in s.get("setup", [])) / 1000
names = ",".join(r["name"] for r in s.get("results", [])) or "-"
why = [r["name"] + ": " + r["environment"].split(" (")[0].split(":")[0] for r in s.get("results", []) if r.get("environment")]
failed = [r["name"] for r in s.get("results", []) if not r["passed"] and not r.get("environment")]
if failed:
    why.append("failed: " + ",".join(failed))
print("\t".join([s["status"], f"{setup:.1f}", names, "; ".join(why)[:160] or "-"]))
PY
}

mkdir -p "$work/dl"
echo "| project | checks run | without deps | why | --fetch-deps (step s) | what it says | again (step s) | class right |"
echo "|---|---|---|---|---|---|---|---|"
for spec in "${crates[@]}" "${sdists[@]}" "${npms[@]}"; do
  case "$spec" in
    *==*) dir="$(fetch_sdist "$spec")" ;;
    *@*) if [[ " ${crates[*]} " == *" $spec "* ]]; then dir="$(fetch_crate "$spec")"; else dir="$(fetch_npm "$spec")"; fi ;;
  esac
  (cd "$dir" && git init -q && git add -A && git -c user.email=m@x -c user.name=m commit -qm import && "$braincode" trust >/dev/null)
  IFS=$'\t' read -r bare _ checks why <<<"$(pass "$dir")"
  IFS=$'\t' read -r first first_s _ first_why <<<"$(pass "$dir" --fetch-deps)"
  IFS=$'\t' read -r second second_s _ _ <<<"$(pass "$dir" --fetch-deps)"
  right="yes"
  [ "$bare" = "failed" ] && right="no (failed without deps)"
  echo "| $spec | $checks | $bare | $why | $first ($first_s) | $first_why | $second ($second_s) | $right |"
done
