#!/usr/bin/env bash
# The SmolLM2-135M-Instruct real-RL evidence on one CUDA GPU with a 64 MiB transfer limit per
# call and results back only through $OUT (docs/results/smollm2_gpu.md, "The runbook").
#
# Here, once:     scripts/gpu_smollm2.sh prepare
#                   split the GGUF, fetch the gguf wheel, dry-run the staging, print the calls
# There, call 1:  scripts/gpu_smollm2.sh stage                carry: runs/device-stage/call1
# There, call 2+: scripts/gpu_smollm2.sh run                  carry: runs/device-stage/call2,
#                                                                    runs/gpu-smollm2/state
#   Each `run` call (<= 10 min) joins the model if needed, restores the finished runs carried
#   in state/, and continues where the last call stopped: calibrate uniform (3 learning rates
#   x 2 calibration seeds; the testbed's preconditions), then the comparison at the chosen
#   learning rate (uniform, bots, greso, dapo x seeds 0-4), then METIS's judge check, then the
#   report. It writes $OUT/state.tar.gz (the finished runs' small files and the results so far),
#   $OUT/summary.md and $OUT/log.txt. Exit 0: all done; 10: not finished, call `run` again
#   right away; 3: the machine is fresh (call `stage` again, then `run`); 1: the testbed's
#   preconditions are not met (read summary.md; nothing more runs).
# Here, after each call:  scripts/gpu_smollm2.sh collect FILES_AT
#   keeps state.tar.gz for the next call's carry and, when the report is there, copies the
#   results into benchmarks/results/.
#
# Environment: CALL_S (the call's limit, 600), CAL_SEEDS (100,101), CAL_LRS (3e-6,1e-5,3e-5),
# SEEDS (0-4), SELECTORS (uniform,bots,greso,dapo; uniform,skip-kept,skip-kept-unpadded runs
# kept steps with and without padding their generation, pad_rows), JOBS (from the
# calibration's memory measurement, at most 16), WORK (/tmp/smollm2); for a rehearsal on a
# CPU: SCALE (toy-smollm2), DEVICE (cpu), PRECISION (fp32), JUDGE_ARGS (a smaller judge
# check), PYTHON, FORCE_COMPARE=1 (go on although the preconditions are not met: a rehearsal
# only).
# A short lease (one 10-minute `run` call): LR=1e-5 skips the calibration and runs the
# comparison at that learning rate (say so in the report: the testbed is then uncalibrated),
# JUDGE=0 skips the judge check. STEPS overrides the testbed's 120 steps (64 = 2 epochs of the
# 512-prompt pool), EVAL_EVERY evaluates every arm every N steps (one schedule for the whole
# comparison, which arms with steps of their own need), UPDATE_ROWS runs each update in
# micro-batches of at most that many rows (128: a 1,024-row step in about a 128-row step's
# memory; 0: the whole step at once) and NAME the results' file stem (smollm2_gpu). A run that fails is retried
# in the same call while time is left. Every run's metrics so far, finished or not, and the
# last 200 lines of its stderr.txt come back in $OUT/partial.tar.gz; the finished runs' ledger
# records in state.tar.gz (ledger/).
set -uo pipefail

STAGE=${STAGE:-runs/device-stage}
STATE=${STATE:-runs/gpu-smollm2/state}
DEVICE_STAGE=${DEVICE_STAGE:-/tmp/stage}
WORK=${WORK:-/tmp/smollm2}
CALL_S=${CALL_S:-600}
CAL_SEEDS=${CAL_SEEDS:-100,101}
CAL_LRS=${CAL_LRS:-3e-6,1e-5,3e-5}
SEEDS=${SEEDS:-0-4}
SELECTORS=${SELECTORS:-uniform,bots,greso,dapo}
SCALE=${SCALE:-gpu-smollm2}
DEVICE=${DEVICE:-cuda}
PRECISION=${PRECISION:-bf16}
JUDGE_ARGS=${JUDGE_ARGS:---warmup-steps 20}
JUDGE=${JUDGE:-1}
LR=${LR:-}
STEPS=${STEPS:-0}
EVAL_EVERY=${EVAL_EVERY:-}
UPDATE_ROWS=${UPDATE_ROWS:-128}
PYTHON=${PYTHON:-python3}
NAME=${NAME:-smollm2_gpu}
START=$SECONDS

say() { echo "gpu_smollm2: $*"; }
left() { echo $(( CALL_S - (SECONDS - START) - ${1:-0} )); }

pack() {
  # The finished runs' small files, the start states and the results: what the next call on a
  # fresh machine needs to skip the work already done (checkpoints stay in $WORK).
  mkdir -p "$OUT"
  (
    cd "$WORK" || exit 0
    {
      find runs -name testbed.json -o -name start_state.json 2>/dev/null
      find runs -name eval.json 2>/dev/null | while read -r done; do
        dir=$(dirname "$done")
        for f in metrics.jsonl run.json eval.json spec.json log.txt; do
          [ -f "$dir/$f" ] && echo "$dir/$f"
        done
      done
      [ -d results ] && find results -type f
      [ -d ledger ] && find ledger -type f
    } | sort -u >"$WORK/.pack"
    tar czf "$OUT/state.tar.gz" -T "$WORK/.pack"
    # Every run's metrics so far, unfinished ones too: the curves up to where the call stopped;
    # and the end of every run's stderr, so that a run that failed says why.
    find runs -name stderr.txt 2>/dev/null | while read -r err; do
      tail -n 200 "$err" >"${err%.txt}.tail.txt"
    done
    find runs -name metrics.jsonl -o -name run.json -o -name spec.json \
      -o -name stderr.tail.txt 2>/dev/null | tar czf "$OUT/partial.tar.gz" -T -
  )
  local md
  md=$(ls -t "$WORK"/results/*.md 2>/dev/null | head -1)
  [ -n "$md" ] && cp "$md" "$OUT/summary.md"
  say "packed $(wc -l <"$WORK/.pack") files into \$OUT/state.tar.gz"
}

finish() {  # finish CODE MESSAGE
  say "$2"
  pack
  exec >&- 2>&-  # let tee write the log's last lines before $OUT is collected
  sleep 1
  exit "$1"
}

bench() {  # bench SECONDS ARGS...: frontier bench-rl, stopped (resumably) after SECONDS
  local budget=$1
  shift
  if [ "$budget" -lt 60 ]; then return 124; fi
  timeout -s INT -k 30 "$budget" "$PYTHON" -m frontier_rft bench-rl --scale "$SCALE" \
    --model "$GGUF" --runs "$WORK/runs" --ledger "$WORK/ledger" --out "$WORK/results" \
    --name "$NAME" --steps "$STEPS" --no-progress --reward-log --update-rows "$UPDATE_ROWS" \
    ${EVAL_EVERY:+--eval-every "$EVAL_EVERY"} "$@"
}

calibrated() {  # prints the chosen lr and the runs that fit; fails when not calibrated
  "$PYTHON" - "$WORK/results/${NAME}_calibration.json" <<'EOF'
import json, sys
try:
    c = json.load(open(sys.argv[1]))
except OSError:
    sys.exit(1)
print(c["chosen_lr"], c["runs_that_fit"] or 10, int(c["preconditions"]["met"]))
EOF
}

case "${1:-}" in
  prepare)
    STAGE=$STAGE EXTRA_CARRY=$STATE NO_CALLS=1 scripts/device_stage.sh dry-run || exit
    mkdir -p "$STATE"
    cat <<EOF

The calls, in order, back to back (the machine stays warm ~30 s after a call; /tmp survives):
  1. command: scripts/gpu_smollm2.sh stage
     carry:   ["$STAGE/call1"]
  2. command: scripts/gpu_smollm2.sh run          (repeat while it exits 10)
     carry:   ["$STAGE/call2", "$STATE"]
After each call: scripts/gpu_smollm2.sh collect FILES_AT
EOF
    ;;
  stage)
    STAGE=$STAGE DEVICE_STAGE=$DEVICE_STAGE scripts/device_stage.sh receive
    ;;
  run)
    : "${OUT:?OUT must name the folder whose files come back}"
    mkdir -p "$WORK" "$OUT"
    exec > >(tee "$OUT/log.txt") 2>&1
    # The finished runs carried back first: whatever happens next, this call's state.tar.gz
    # holds at least what it was given.
    if [ -f "$STATE/state.tar.gz" ]; then
      tar xzf "$STATE/state.tar.gz" -C "$WORK" && say "restored the finished runs carried in $STATE"
    fi
    GGUF=$(STAGE=$STAGE DEVICE_STAGE=$DEVICE_STAGE PYTHON=$PYTHON scripts/device_stage.sh assemble | tail -1)
    case $? in 0) ;; 3) finish 3 "the model is not staged: call \`stage\`, then \`run\` again" ;;
      *) finish 2 "staging failed" ;; esac
    [ -f "$GGUF" ] || finish 3 "the model is not staged: call \`stage\`, then \`run\` again"
    export PYTHONPATH=src:$DEVICE_STAGE/site PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
    export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    # 1. Calibration: uniform alone, on its own seeds; freezes the learning rate.
    if [ -n "$LR" ]; then
      say "no calibration: the comparison runs at lr $LR (LR given)"
    elif ! calibrated >/dev/null; then
      bench "$(left 45)" --calibrate --seeds "$CAL_SEEDS" --calibrate-lrs "$CAL_LRS" --jobs 6
      rc=$?
      [ "$rc" = 1 ] && [ -z "${FORCE_COMPARE:-}" ] &&
        finish 1 "the testbed's preconditions are not met: see summary.md"
      calibrated >/dev/null || finish 10 "calibration not finished (exit $rc): call \`run\` again"
    fi
    if [ -z "$LR" ]; then
      read -r LR FIT MET <<<"$(calibrated)"
      [ "$MET" = 1 ] || [ -n "${FORCE_COMPARE:-}" ] ||
        finish 1 "the testbed's preconditions are not met: see summary.md"
    fi
    JOBS=${JOBS:-$(( ${FIT:-16} < 16 ? ${FIT:-16} : 16 ))}
    # 2. The comparison at the frozen learning rate (seed-major: whole paired seeds first).
    if [ ! -f "$WORK/results/$NAME.json" ]; then
      # bench-rl exits 1 when runs failed (it retries them when run again: they resume) and
      # 124 when the time ran out; so it runs again while the first is the case and time is left.
      for attempt in 1 2 3; do
        bench "$(left 45)" --lr "$LR" --selectors "$SELECTORS" --no-effects --seeds "$SEEDS" \
          --jobs "$JOBS"
        rc=$?
        [ "$rc" = 0 ] || [ "$rc" = 124 ] || [ "$(left 45)" -lt 120 ] && break
        say "runs failed (exit $rc, attempt $attempt): running the comparison again"
      done
      if [ "$rc" != 0 ]; then
        if [ "$(left 0)" -gt 40 ]; then  # the complete paired seeds so far, for reading
          timeout 40 "$PYTHON" -m frontier_rft bench-rl --scale "$SCALE" --model "$GGUF" \
            --lr "$LR" --selectors "$SELECTORS" --no-effects --seeds "$SEEDS" --report-only \
            --steps "$STEPS" ${EVAL_EVERY:+--eval-every "$EVAL_EVERY"} \
            --runs "$WORK/runs" --ledger "$WORK/ledger" --out "$WORK/partial" --name "$NAME" \
            --no-progress \
            --device "$DEVICE" >/dev/null 2>&1 && cp "$WORK/partial/$NAME.md" "$OUT/partial.md"
        fi
        finish 10 "comparison not finished (exit $rc): call \`run\` again"
      fi
    fi
    # 3. METIS with the real judge: parse rate and Spearman on 64 held-out prompts.
    if [ "$JUDGE" != 0 ] && [ ! -f "$WORK/results/${NAME}_judge.json" ]; then
      [ "$(left 45)" -gt 150 ] || finish 10 "the judge check needs ~2 min: call \`run\` again"
      START_MODEL=$WORK/runs/model-start  # saved by the calibration: loads faster than the GGUF
      [ -f "$START_MODEL/config.json" ] || START_MODEL=$GGUF
      # shellcheck disable=SC2086  # JUDGE_ARGS is a list of flags
      timeout -k 10 "$(left 45)" "$PYTHON" benchmarks/metis_judge_check.py \
        --model "$START_MODEL" --device "$DEVICE" --precision "$PRECISION" $JUDGE_ARGS \
        --json "$WORK/results/${NAME}_judge.json" ||
        finish 10 "judge check not finished: call \`run\` again"
    fi
    finish 0 "done: results in \$OUT/state.tar.gz (results/); run \`collect\` here"
    ;;
  collect)
    files=${2:?usage: $0 collect FILES_AT (the folder the device tool copied \$OUT into)}
    [ -f "$files/state.tar.gz" ] || { echo "no state.tar.gz in $files" >&2; exit 2; }
    mkdir -p "$STATE"
    count() { tar tzf "$1" 2>/dev/null | wc -l; }
    if [ -f "$STATE/state.tar.gz" ] && [ "$(count "$files/state.tar.gz")" -lt "$(count "$STATE/state.tar.gz")" ]; then
      echo "kept the earlier $STATE/state.tar.gz: it holds more finished runs than this call's"
    else
      cp "$files/state.tar.gz" "$STATE/state.tar.gz"
      echo "kept $STATE/state.tar.gz for the next call's carry"
    fi
    tmp=$(mktemp -d)
    tar xzf "$files/state.tar.gz" -C "$tmp" results 2>/dev/null
    if [ -f "$tmp/results/$NAME.json" ] && { [ "$JUDGE" = 0 ] || [ -f "$tmp/results/${NAME}_judge.json" ]; }; then
      cp "$tmp"/results/* benchmarks/results/
      echo "copied $(ls "$tmp/results" | wc -l) result files into benchmarks/results/"
    else
      echo "not finished yet; results so far:" $(ls "$files"/summary.md "$files"/partial.md 2>/dev/null)
    fi
    rm -rf "$tmp"
    ;;
  *)
    echo "usage: $0 prepare | stage | run | collect FILES_AT" >&2
    exit 2
    ;;
esac
