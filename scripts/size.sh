#!/usr/bin/env bash
# Prints the size of the tracked files (as `git ls-files | xargs du -cb`
# counts it), the largest folders, and fails above LIMIT bytes (30 MB).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${LIMIT:-30000000}
sizes=$(git ls-files -z | xargs -0 stat -c '%s %n')
total=$(awk '{s += $1} END {print s + 0}' <<<"$sizes")
echo "largest folders (bytes):"
awk '{n = split($2, p, "/"); d = (n > 2) ? p[1] "/" p[2] : (n == 2 ? p[1] : "."); s[d] += $1} END {for (d in s) printf "%12d  %s\n", s[d], d}' <<<"$sizes" | sort -rn | head -12
printf 'tracked files: %d bytes (%.1f MB), limit %d\n' "$total" "$(awk -v t="$total" 'BEGIN {print t / 1e6}')" "$limit"
if [ "$total" -gt "$limit" ]; then
  echo "the tracked files are over the limit" >&2
  exit 1
fi
