#!/usr/bin/env bash
# The throughput gate as a plain script, for any CI on a TPU VM (Jenkins, GitLab, cron).
#
#   examples/ci/tpu-bench.sh                         # gate against $BASELINE
#   REFRESH_BASELINE=1 examples/ci/tpu-bench.sh      # record a new baseline to review and commit
#
# Exit status is tpudoctor's: 0 ok, 1 regression (or the model failed to train), 2 missing or
# mismatched baseline / bad flags, 3 tpudoctor itself broke. Outputs land in $OUT_DIR; the
# Markdown summary is appended to $GITHUB_STEP_SUMMARY when that is set.
set -euo pipefail

MODEL="${MODEL:-resnet_tiny}"
BASELINE="${BASELINE:-ci/baselines/${MODEL}-v4-8.json}"
TOLERANCE="${TOLERANCE:-5%}"
STEPS="${STEPS:-50}"
REPEATS="${REPEATS:-10}"
OUT_DIR="${OUT_DIR:-bench-out}"
TPUDOCTOR="${TPUDOCTOR:-tpudoctor}"

mkdir -p "$OUT_DIR"

publish() {
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$OUT_DIR/bench-summary.md" ]; then
    cat "$OUT_DIR/bench-summary.md" >> "$GITHUB_STEP_SUMMARY"
  fi
}
trap publish EXIT

if [ -n "${REFRESH_BASELINE:-}" ]; then
  "$TPUDOCTOR" bench --model "$MODEL" --steps "$STEPS" --repeats "$REPEATS" \
    --save-baseline "$BASELINE" --markdown-summary "$OUT_DIR/bench-summary.md"
  echo "new baseline written to $BASELINE: review it and commit it"
  exit 0
fi

status=0
"$TPUDOCTOR" bench --model "$MODEL" --steps "$STEPS" --repeats "$REPEATS" \
  --baseline "$BASELINE" --tolerance "$TOLERANCE" \
  --format json -o "$OUT_DIR/bench.json" \
  --junit "$OUT_DIR/bench-junit.xml" --markdown-summary "$OUT_DIR/bench-summary.md" || status=$?

case "$status" in
  0) echo "throughput within tolerance of $BASELINE" ;;
  1) echo "throughput regression (or the reference model failed): see $OUT_DIR/bench-summary.md" >&2 ;;
  2) echo "no comparable baseline: record one with REFRESH_BASELINE=1 on this TPU type and runtime" >&2 ;;
  *) echo "tpudoctor failed (exit $status)" >&2 ;;
esac
exit "$status"
