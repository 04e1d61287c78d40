#!/usr/bin/env bash
# Stage a file larger than one call's transfer limit (the ~98 MB SmolLM2-135M-Instruct GGUF)
# onto a GPU machine that receives at most a 64 MiB working tree per call, and keeps /tmp
# between back-to-back calls while it stays warm (docs/results/smollm2_gpu.md, "Staging").
#
# Here (the machine with the model installed: `make smollm2`):
#   scripts/device_stage.sh split [FILE]     cut FILE into parts of $PART_MIB MiB under $STAGE:
#                                            call1/ the first part, call2/ the rest plus the
#                                            gguf wheel; both with SHA256SUMS and PARTS
#   scripts/device_stage.sh dry-run [FILE]   split, then join the parts in a temp dir exactly as
#                                            the GPU machine will, check the sha256, check each
#                                            call's carried size against the limit and print the
#                                            two calls (nothing is sent anywhere)
# There (each command runs in the repository root of the carried working tree):
#   scripts/device_stage.sh receive          call 1: copy call1/ to $DEVICE_STAGE
#   scripts/device_stage.sh assemble         call 2 (right after call 1): copy call2/ there, join
#                                            the parts, check the sha256, install the gguf wheel
#                                            into $DEVICE_STAGE/site; prints the file's path.
#                                            Idempotent; exit 3 when call 1's part is missing
#                                            (a fresh machine: run call 1 again, then this one)
#
# FILE defaults to the GGUF that `make smollm2` installed. The parts live in an ignored
# directory (runs/ is in .gitignore), so they travel only when a call names them in `carry`.
set -euo pipefail

STAGE=${STAGE:-runs/device-stage}
DEVICE_STAGE=${DEVICE_STAGE:-/tmp/stage}
PART_MIB=${PART_MIB:-46}
LIMIT_MIB=${LIMIT_MIB:-64}
MARGIN_MIB=${MARGIN_MIB:-4}
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

die() { echo "device_stage: $1" >&2; exit "${2:-2}"; }
mib() { echo $(( ($1 + 1048575) / 1048576 )); }

default_file() {
  PYTHONPATH=src "$PYTHON" -c \
    'from frontier_rft.lm.pretrained import smollm2_gguf as f; p = f(); print(p or "")'
}

do_split() {
  local file=${1:-$(default_file)}
  [ -n "$file" ] && [ -f "$file" ] || die "no file to split (SmolLM2 not installed? run \`make smollm2\`, or pass FILE)"
  local name
  name=$(basename "$file")
  rm -rf "$STAGE/call1" "$STAGE/call2" "$STAGE/.split"  # $STAGE/wheels is kept
  mkdir -p "$STAGE/call1" "$STAGE/call2" "$STAGE/.split"
  split -b "${PART_MIB}m" "$file" "$STAGE/.split/$name.part-"
  local parts=("$STAGE"/.split/"$name".part-*)
  [ "${#parts[@]}" -ge 2 ] || die "$name fits one call (${#parts[@]} part): carry it as it is"
  mv "${parts[0]}" "$STAGE/call1/"
  for part in "${parts[@]:1}"; do mv "$part" "$STAGE/call2/"; done
  rmdir "$STAGE/.split"
  (cd "$(dirname "$file")" && sha256sum "$name") >"$STAGE/call1/SHA256SUMS"
  cp "$STAGE/call1/SHA256SUMS" "$STAGE/call2/SHA256SUMS"
  for part in "${parts[@]}"; do basename "$part"; done >"$STAGE/call1/PARTS"
  cp "$STAGE/call1/PARTS" "$STAGE/call2/PARTS"
  # The GPU machine has no registry: the gguf reader travels as its wheel (pure Python; its
  # needs, numpy, pyyaml, requests and tqdm, are in that machine's image).
  if [ -n "${NO_WHEEL:-}" ]; then  # tests: no registry
    echo "split $name into ${#parts[@]} parts (no wheel: NO_WHEEL is set)"
    return
  fi
  local version wheel
  version=$("$PYTHON" -c 'import importlib.metadata as m; print(m.version("gguf"))' 2>/dev/null || true)
  wheel=$(ls "$STAGE"/wheels/gguf-"${version:-*}"-py3-none-any.whl 2>/dev/null | tail -1 || true)
  if [ -z "$wheel" ]; then
    "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: -d "$STAGE/wheels" \
      "gguf${version:+==$version}" ||
      die "could not download the gguf wheel; put gguf-*-py3-none-any.whl into $STAGE/wheels"
    wheel=$(ls "$STAGE"/wheels/gguf-*-py3-none-any.whl | tail -1)
  fi
  cp "$wheel" "$STAGE/call2/"
  echo "split $name ($(mib "$(stat -c %s "$file")") MiB) into ${#parts[@]} parts of <= $PART_MIB MiB:"
  ls -l "$STAGE/call1" "$STAGE/call2"
}

tree_bytes() {
  # What travels with every call: tracked files and untracked ones git does not ignore.
  git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null |
    awk '{s += $1} END {print s + 0}'
}

dir_bytes() { { du -sb "$@" 2>/dev/null || true; } | awk '{s += $1} END {print s + 0}'; }

do_dry_run() {
  do_split "${1:-}"
  local name
  name=$(awk '{print $2}' "$STAGE/call1/SHA256SUMS")
  DRY_TMP=$(mktemp -d)
  trap 'rm -rf "$DRY_TMP"' EXIT
  local tmp=$DRY_TMP
  # The two calls, simulated: call 1 copies its part, call 2 the rest, then they are joined.
  STAGE=$STAGE DEVICE_STAGE=$tmp/stage PYTHON=$PYTHON "$0" receive >/dev/null
  STAGE=$STAGE DEVICE_STAGE=$tmp/stage PYTHON=$PYTHON NO_WHEEL=1 "$0" assemble >/dev/null
  [ -f "$tmp/stage/$name" ] || die "dry run: the parts did not join into $name"
  echo "dry run: parts joined and sha256 checked: $(cut -c1-16 "$STAGE/call1/SHA256SUMS")... $name"
  local tree state1 state2 limit ok=1
  tree=$(tree_bytes)
  state1=$(dir_bytes "$STAGE/call1")
  state2=$(dir_bytes "$STAGE/call2" ${EXTRA_CARRY:-})
  limit=$(( (LIMIT_MIB - MARGIN_MIB) * 1048576 ))
  echo "working tree $(mib "$tree") MiB; call 1 carries $(mib "$state1") MiB, call 2 carries" \
    "$(mib "$state2") MiB${EXTRA_CARRY:+ (with $EXTRA_CARRY)}; limit $LIMIT_MIB MiB (margin $MARGIN_MIB)"
  for n in 1 2; do
    local v=state$n
    if [ $(( tree + ${!v} )) -gt "$limit" ]; then
      echo "call $n would send $(mib $(( tree + ${!v} ))) MiB: over the limit" >&2
      ok=0
    fi
  done
  [ "$ok" = 1 ] || die "lower PART_MIB, or shrink the working tree (untracked files travel)"
  [ -z "${NO_CALLS:-}" ] || return 0  # a runbook prints its own calls
  cat <<EOF

Call 1 (the device tool's run; right after it, call 2):
  command: scripts/device_stage.sh receive
  carry:   ["$STAGE/call1"]
Call 2:
  command: scripts/device_stage.sh assemble && export PYTHONPATH=src:$DEVICE_STAGE/site && <your run>
  carry:   ["$STAGE/call2"]
The file is then $DEVICE_STAGE/$name. Calls after these need no carry while the machine
stays warm; on a fresh machine (exit 3 from assemble) run call 1 again, then call 2.
EOF
}

do_receive() {
  [ -f "$STAGE/call1/SHA256SUMS" ] || die "$STAGE/call1 not carried: name it in this call's carry"
  mkdir -p "$DEVICE_STAGE"
  cp "$STAGE"/call1/* "$DEVICE_STAGE/"
  echo "received $(ls "$STAGE/call1" | tr '\n' ' ')into $DEVICE_STAGE"
}

do_assemble() {
  local sums=$STAGE/call2/SHA256SUMS
  [ -f "$sums" ] || sums=$DEVICE_STAGE/SHA256SUMS
  [ -f "$sums" ] || die "neither $STAGE/call2 carried nor call 1 received: run call 1, then call 2" 3
  sums=$(realpath "$sums")
  local name
  name=$(awk '{print $2}' "$sums")
  mkdir -p "$DEVICE_STAGE"
  if ! (cd "$DEVICE_STAGE" && sha256sum --quiet -c "$sums" 2>/dev/null); then
    [ -d "$STAGE/call2" ] && cp "$STAGE"/call2/*.part-* "$DEVICE_STAGE/"
    local list=() part parts=$STAGE/call2/PARTS
    [ -f "$parts" ] || parts=$DEVICE_STAGE/PARTS
    while read -r part; do
      [ -f "$DEVICE_STAGE/$part" ] ||
        die "part $part is not in $DEVICE_STAGE (a fresh machine?): run call 1 again, then this call" 3
      list+=("$DEVICE_STAGE/$part")
    done <"$parts"
    cat "${list[@]}" >"$DEVICE_STAGE/$name.joining"
    mv "$DEVICE_STAGE/$name.joining" "$DEVICE_STAGE/$name"
    (cd "$DEVICE_STAGE" && sha256sum --quiet -c "$sums") ||
      { rm -f "$DEVICE_STAGE/$name"; die "$name: sha256 mismatch after joining; stage again" 4; }
    rm -f "${list[@]}"
  fi
  if [ -z "${NO_WHEEL:-}" ] && [ ! -d "$DEVICE_STAGE/site/gguf" ]; then
    local wheels=("$STAGE"/call2/gguf-*.whl)
    [ -f "${wheels[0]}" ] || die "no gguf wheel in $STAGE/call2: run split here again" 3
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$DEVICE_STAGE/site" "${wheels[@]}"
  fi
  echo "$DEVICE_STAGE/$name"
}

case "${1:-}" in
  split) do_split "${2:-}" ;;
  dry-run) do_dry_run "${2:-}" ;;
  receive) do_receive ;;
  assemble) do_assemble ;;
  *) die "usage: $0 split|dry-run [FILE] | receive | assemble" ;;
esac
