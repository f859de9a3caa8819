#!/usr/bin/env bash
# A newcomer's first run on real projects nobody here wrote: each fetched with its registry's
# ordinary client (a crate's `.crate`, a PyPI sdist, an npm tarball), then
# `braincode bench local --first-run DIR` — `braincode run "explain what this repository does"`
# offline on the embedded model, in a fresh home with the model already pulled — and a
# Markdown table: wall time, whether the answer names the main language and a build/test
# command, and how many of the file paths it mentions exist.
#
# Needs the network to the package registries for the downloads (not a test: run it by hand).
# Usage: scripts/measure-first-run.sh [WORKDIR]   (default: /var/tmp/braincode-first-run)
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-/var/tmp/braincode-first-run}"
braincode="${BRAINCODE_BIN:-$here/target/release/braincode}"
[ -x "$braincode" ] || braincode="$here/target/debug/braincode"
[ -x "$braincode" ] || { echo "build braincode first (cargo build --release)" >&2; exit 2; }

rm -rf "$work" && mkdir -p "$work/src" "$work/dl"

fetch() { # kind spec -> dir
  local kind="$1" spec="$2" name version
  case "$kind" in
    crate)
      name="${spec%@*}" version="${spec#*@}"
      curl -sSfL "https://static.crates.io/crates/$name/$name-$version.crate" | tar xz -C "$work/src"
      echo "$work/src/$name-$version" ;;
    sdist)
      name="${spec%==*}" version="${spec#*==}"
      python3 -m pip download -q --no-deps --no-binary :all: -d "$work/dl" "$spec"
      tar xzf "$work/dl/$name-$version.tar.gz" -C "$work/src"
      echo "$work/src/$name-$version" ;;
    npm)
      name="${spec%@*}"
      (cd "$work/dl" && npm pack -q "$spec" >/dev/null)
      mkdir -p "$work/src/$spec"
      tar xzf "$work/dl/$name-"*.tgz -C "$work/src/$spec" --strip-components=1
      rm -f "$work/dl/$name-"*.tgz
      echo "$work/src/$spec" ;;
  esac
}

echo "| project | kind | wall (s) | main language named | build/test command named | paths that exist | made-up paths flagged |"
echo "|---|---|---|---|---|---|---|"
for entry in crate:similar@2.6.0 crate:either@1.13.0 sdist:attrs==25.3.0 sdist:packaging==24.1 npm:left-pad@1.3.0; do
  kind="${entry%%:*}" spec="${entry#*:}"
  dir="$(fetch "$kind" "$spec")"
  (cd "$dir" && git init -q && git add -A && git -c user.email=m@x -c user.name=m commit -qm import)
  "$braincode" bench local --first-run "$dir" --runs 1 --json > "$work/$kind-${spec//[\/@=]/_}.json"
  python3 - "$spec" "$kind" "$work/$kind-${spec//[\/@=]/_}.json" <<'PY'
import json, sys
spec, kind, path = sys.argv[1:4]
r = json.load(open(path))["runs"][0]
yes = lambda b: "yes" if b else "no"
made_up = r['pathsMentioned'] - r['pathsThatExist']
print(f"| {spec} | {kind} | {r['seconds']:.1f} | {yes(r['namesLanguage'])} | {yes(r['namesCommand'])} | {r['pathsThatExist']} of {r['pathsMentioned']} | {r['madeUpPathsFlagged']} of {made_up} |")
PY
done
