#!/usr/bin/env bash
# Fails when a crate under crates/ declares a dependency its code never names.
#
#   scripts/check-unused-deps.sh
#
# For every crates/*/Cargo.toml, each key of [dependencies], [dev-dependencies],
# [build-dependencies] and [target.*.dependencies] must appear in the crate's Rust files
# (src/, tests/, benches/, examples/, build.rs) as a path (`name::`, derives and attribute
# macros included), a `use name` or an `extern crate name`. A dependency needed for another
# reason (a feature switch, a linked library) is listed in ALLOWED below with that reason.
#
# What cargo-machete checks, in plain grep: its install takes minutes, this takes a second.
set -euo pipefail
cd "$(dirname "$0")/.."

# "crate:dependency" pairs known to be needed though never named. Keep each with its reason.
ALLOWED=(
)

allowed() {
  local pair=$1 entry
  for entry in "${ALLOWED[@]}"; do
    [ "$entry" = "$pair" ] && return 0
  done
  return 1
}

# The dependency keys of one manifest, one a line.
dependency_keys() {
  awk '
    /^\[/ {
      in_deps = ($0 ~ /^\[(dev-|build-)?dependencies\]$/ || $0 ~ /^\[target\..*\.(dev-|build-)?dependencies\]$/)
      next
    }
    in_deps && /^[A-Za-z0-9_-]+[ .=]/ {
      key = $0
      sub(/[ .=].*/, "", key)
      print key
    }
  ' "$1" | sort -u
}

unused=()
for manifest in crates/*/Cargo.toml; do
  dir=$(dirname "$manifest")
  package=$(awk -F'"' '/^name = / { print $2; exit }' "$manifest")
  sources=()
  for part in src tests benches examples build.rs; do
    [ -e "$dir/$part" ] && sources+=("$dir/$part")
  done
  [ "${#sources[@]}" -eq 0 ] && continue
  while read -r key; do
    [ -z "$key" ] && continue
    name=${key//-/_}
    if grep -rqE --include='*.rs' "(\b${name}::|\buse ${name}\b|\bextern crate ${name}\b)" "${sources[@]}"; then
      continue
    fi
    allowed "$package:$key" || unused+=("$package: $key ($manifest)")
  done < <(dependency_keys "$manifest")
done

if [ "${#unused[@]}" -gt 0 ]; then
  echo "Unused dependencies (remove them, or list them in ALLOWED in $0 with the reason):" >&2
  printf '  %s\n' "${unused[@]}" >&2
  exit 1
fi
echo "no unused dependencies"
