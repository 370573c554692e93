#!/bin/sh
# Run every benchmark (`cargo bench`), show its output, then print one table of the figures the
# benches report (their `TABLE` lines, see benches/support/report.rs) with each bench's machine
# gauge and load average. With `--readme`, also put that table into docs/performance.md (the
# performance page the README links to) between the `bench-table` markers, so its figures are
# never typed by hand.
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp)
table=$(mktemp)
page=docs/performance.md
trap 'rm -f "$out" "$table" "$page.new"' EXIT INT TERM
${CARGO:-cargo} bench --locked --no-fail-fast 2>&1 | tee "$out" | grep -v '^TABLE'
awk -F '\t' '
/Running benches\// {
    if (match($0, /benches\/[A-Za-z0-9_]+\.rs/)) bench = substr($0, RSTART + 8, RLENGTH - 11)
}
/^TABLE\t/ {
    if ($2 == "gauge") {
        seen = (bench in gauge)
        if (!seen) order[++benches] = bench
        gauge[bench] = (seen ? gauge[bench] " → " : "") $3 " (" $4 ")"
        next
    }
    rows[++n] = "| " $2 " | " $3 " | " $4 " | `" bench "` |"
}
END {
    print "| what | median | more | bench |"
    print "|---|---|---|---|"
    for (i = 1; i <= n; i++) print rows[i]
    print ""
    print "Machine gauge (a fixed 400M-step integer loop on one thread: lower is a faster machine) and"
    print "1-minute load average, before → after each bench:"
    print ""
    for (i = 1; i <= benches; i++) print "- `" order[i] "`: " gauge[order[i]]
}' "$out" > "$table"
echo
cat "$table"
if [ "${1:-}" = "--readme" ]; then
    awk -v table="$table" '
    /<!-- bench-table:start -->/ { print; print ""; while ((getline line < table) > 0) print line; print ""; skip = 1; next }
    /<!-- bench-table:end -->/ { skip = 0 }
    !skip { print }' "$page" > "$page.new"
    grep -q '<!-- bench-table:start -->' "$page.new" || { echo "$page: no bench-table markers" >&2; exit 1; }
    mv "$page.new" "$page"
    echo "$page: performance table rewritten"
fi
