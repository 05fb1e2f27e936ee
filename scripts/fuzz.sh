#!/usr/bin/env bash
# Runs every fuzz target of the module (the template engine's under
# tokenizer/internal/jinja included) for FUZZTIME each (default 30s), each
# from its seeds (f.Add: the grammar targets' include the inputs of issue
# 39) and testdata/fuzz corpus, and prints how many inputs each one
# executed.
#
# Minimisation is bounded by count (-fuzzminimizetime 10x), not time: with
# a time bound every new interesting input of a target with large seeds
# (a GGUF vocabulary, a tokenizer.json) was minimised for seconds, calling
# the target hundreds of thousands of times without counting them as
# executions, so such a target reported a few execs a minute and explored
# nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-30s}
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do
  pkg=$(dirname "${file#./}")
  [ "$pkg" = . ] || pkg=./$pkg
  for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
    log=$(mktemp)
    echo "== $pkg $target ($fuzztime)"
    if ! go test "$pkg" -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" -fuzzminimizetime 10x >"$log" 2>&1; then
      cat "$log"
      rm -f "$log"
      exit 1
    fi
    line=$(grep -o 'execs: [0-9]*.*' "$log" | tail -n 1 || true)
    execs=$(sed -n 's/^execs: \([0-9]*\).*/\1/p' <<<"$line")
    interesting=$(sed -n 's/.*new interesting: \([0-9]*\).*/\1/p' <<<"$line")
    printf '%-14s %-24s %10s execs %6s new interesting\n' "$pkg" "$target" "${execs:-?}" "${interesting:-?}" | tee -a "$summary"
    rm -f "$log"
  done
done
echo
echo "fuzz summary ($fuzztime a target):"
cat "$summary"
