#!/usr/bin/env bash
# The README's commands after the demo, as a newcomer types them (issue 41): the demo's run
# (tools/scripts/demo-run.sh, what demo.sh does once it has built the tools), then every command
# of the README's block between "readme-test: begin" and "end", in order, from a copy of the
# source tree's layout (build/ and demo/ as the demo leaves them). Fails at the first command
# that does not work, naming it.
#   run_readme_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -uo pipefail
source_dir="$1"; build_dir="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"; cd "$work" || exit 1
ln -s "$build_dir" build

bash "$source_dir/tools/scripts/demo-run.sh" build demo >demo.out 2>demo.err ||
  { echo "FAIL: the demo's run: $(cat demo.err)"; exit 1; }
for made in demo/multithreaded.json demo/gzip.json.gz; do
  [ -s "$made" ] || { echo "FAIL: the demo did not make $made"; exit 1; }
done
grep -q 'export PATH=' demo.out || { echo "FAIL: the demo does not say how to put the tools on PATH"; exit 1; }

block=$(sed -n '/<!-- readme-test: begin -->/,/<!-- readme-test: end -->/p' "$source_dir/README.md" |
        grep -v 'readme-test' | sed 's/^    //')
[ -n "$block" ] || { echo "FAIL: no readme-test block in README.md"; exit 1; }
count=0
while IFS= read -r line; do
  [ -n "$line" ] || continue
  count=$((count + 1))
  echo "\$ $line"
  # As in one terminal: an `export` holds for the lines after it.
  [[ "$line" == export* ]] && echo "$line" >> environment.sh
  touch environment.sh
  if ! bash -c "set -e; source ./environment.sh; $line" >out.txt 2>err.txt; then
    echo "FAIL: README command $count does not work: $line"
    cat out.txt err.txt
    exit 1
  fi
done <<< "$block"
[ "$count" -ge 3 ] || { echo "FAIL: only $count commands in the README's block"; exit 1; }
echo "readme: the $count commands after the demo work"
