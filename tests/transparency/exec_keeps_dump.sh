#!/usr/bin/env bash
# Item (issue 39): a profiled program that execs keeps the samples of the image it leaves. The
# program (exec_keeps_dump.cc) computes for ~1 s in first_image_busy, then execs itself, and the
# new image computes for ~1 s in second_image_busy; profiled (preloaded, and linked) at 1 ms with
# INPROF_OUTPUT=DIR/prof-%p.inprof (the pid does not change across exec). Whatever the files are
# called, every file left in DIR must be read by symbolicate --summary without complaint, and
# both busy functions must appear in their summaries: a dump truncated by the new image, or one
# never finished by the old, loses the first second. Output and exit status as unprofiled.
#   exec_keeps_dump.sh --plain PROG --linked PROG --preload LIB --symbolicate SYM --work-dir DIR
set -uo pipefail
while (($#)); do
  case $1 in
    --plain) plain=$2 ;; --linked) linked=$2 ;; --preload) preload=$2 ;;
    --symbolicate) symbolicate=$2 ;; --work-dir) work=$2 ;;
    *) echo "exec_keeps_dump: unknown argument $1"; exit 2 ;;
  esac
  shift 2
done
rm -rf "$work"; mkdir -p "$work"; cd "$work" || exit 2
failed=0
fail() { echo "FAIL: $*"; failed=1; }

timeout -k 5 60 "$plain" >plain.out 2>plain.err </dev/null; echo $? >plain.status
echo "== unprofiled: exit $(cat plain.status)"; sed 's/^/   /' plain.out
for how in preload linked; do
  dir=$work/$how; mkdir -p "$dir"
  if [[ $how == linked ]]; then prog=$linked; pre=(); else prog=$plain; pre=(LD_PRELOAD="$preload"); fi
  timeout -k 5 60 env "${pre[@]}" INPROF_STARTUP=1 INPROF_INTERVAL=1ms \
    INPROF_OUTPUT="$dir/prof-%p.inprof" "$prog" >"$how.out" 2>"$how.err" </dev/null
  echo $? >"$how.status"
  echo "== $how: exit $(cat "$how.status")"
  if ! cmp -s plain.out "$how.out" || ! cmp -s plain.status "$how.status"; then
    fail "$how: output or exit status differs"; diff plain.out "$how.out" | sed 's/^/   /'
    sed 's/^/   stderr: /' "$how.err" | head
  fi
  shopt -s nullglob
  files=("$dir"/*)
  shopt -u nullglob
  echo "   files: $(cd "$dir" && ls -l | tail -n +2 | awk '{print $NF " (" $5 " bytes)"}' | tr '\n' ' ')"
  ((${#files[@]})) || { fail "$how: no dump in $dir"; continue; }
  : >"$how.union"
  for f in "${files[@]}"; do
    "$symbolicate" --summary --top 50 --quiet-modules "$f" >"$f.summary" 2>"$f.symerr"
    status=$?
    if ((status != 0)); then
      fail "$how: symbolicate exit $status on $(basename "$f")"; sed 's/^/   /' "$f.symerr" | head -5
    elif grep -q warning "$f.symerr"; then
      fail "$how: symbolicate warned on $(basename "$f")"; grep warning "$f.symerr" | sed 's/^/   /' | head -5
    fi
    cat "$f.summary" >>"$how.union"
  done
  for fn in first_image_busy second_image_busy; do
    grep -q "$fn" "$how.union" || fail "$how: $fn (one image's second of work) in no dump"
  done
done
if ((failed)); then echo "FAIL: exec loses profile data"; exit 1; fi
echo "PASS: both images' samples are in readable dumps"
