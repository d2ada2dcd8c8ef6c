#!/usr/bin/env bash
# Issue 18's GPU checks in one device call (the lease is short: README's "device" notes).
# Runs from the repository root on the GPU machine, with its own python3 and torch (no
# install: PYTHONPATH), and writes what comes back under $OUT:
#   log.txt      the machine, torch, the cuda-marked tests, each step's tail
#   mix.json     `pyfy-fuzz run --device cuda` (default mix) summary
#   aot.json     `pyfy-fuzz run --device cuda --backend aot_eager` summary
#   bench.json   cudagraph-family throughput and harness overhead against bare
#                torch.compile(mode="reduce-overhead") (Inductor's cudagraph trees)
#   corpora.tgz  both campaigns' corpora (findings to triage)
#   migrated.tgz MIGRATE=DIR: a copy of the corpus DIR (found on a GPU) migrated on the GPU
#                (`pyfy-fuzz migrate --device cuda`), each entry's repro.py run alone
#   repros.txt   REPROS=1: each new entry's repro.py (both campaigns; repros-migrated.txt:
#                MIGRATE's) run alone (benchmarks/run_repros.py):
#                exit code (1 the bug, 0 fixed, 2 another error, 3 the reference raises),
#                seconds, last line
# Sizes: MIX, AOT (campaign budgets; AOT=0 skips it), TESTS_S (0 skips the tests), BENCH=0
# skips the benchmark. KNOWN=1 starts each campaign's corpus as a copy of the checked-in
# corpus/, so bugs already there count as known rather than new.
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
OUT="${OUT:-/tmp/pyfy-gpu-out}"
mkdir -p "$OUT"
LOG="$OUT/log.txt"
MIX="${MIX:-150s}" AOT="${AOT:-60s}" TESTS_S="${TESTS_S:-200}" BENCH="${BENCH:-1}"
KNOWN="${KNOWN:-0}" MIGRATE="${MIGRATE:-}" REPROS="${REPROS:-0}"
WORKERS="${WORKERS:-8}"
step() { echo "=== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }

step "machine"
{
  nvidia-smi -L
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
  nproc
} >>"$LOG" 2>&1

if [ "$TESTS_S" != 0 ]; then
  step "cuda-marked tests"
  timeout "$TESTS_S" python3 -m pytest -q -p no:cacheprovider -p no:randomly -m cuda \
    tests/test_cuda.py tests/pythonify/test_cudagraph_emulation.py \
    tests/pythonify/test_cudagraph_pythonify.py tests/generators/test_device.py >>"$LOG" 2>&1
  echo "pytest rc $?" | tee -a "$LOG"
fi

if [ -n "$MIGRATE" ]; then
  step "migrate a copy of $MIGRATE on the GPU"
  rm -rf /tmp/c-migrated && cp -r "$MIGRATE" /tmp/c-migrated
  timeout 300 python3 -m pyfy_fuzz migrate /tmp/c-migrated --device cuda --workers "$WORKERS" \
    >/tmp/migrate.log 2>&1
  echo "migrate rc $?" >>/tmp/migrate.log
  tail -n 45 /tmp/migrate.log >>"$LOG"
  cp /tmp/migrate.log /tmp/c-migrated/migrate.log
  tar czf "$OUT/migrated.tgz" --exclude=trace --exclude=tlparse -C /tmp c-migrated 2>>"$LOG"
  if [ "$REPROS" = 1 ]; then
    step "each migrated entry's repro.py alone, 8 at a time"
    timeout 200 python3 benchmarks/run_repros.py --jobs 8 --timeout 100 /tmp/c-migrated \
      >"$OUT/repros-migrated.txt" 2>>"$LOG"
  fi
fi

rm -rf /tmp/c-mix /tmp/c-aot
mkdir -p /tmp/c-mix /tmp/c-aot
if [ "$KNOWN" = 1 ]; then
  cp -r corpus/. /tmp/c-mix/ && cp -r corpus/. /tmp/c-aot/
fi
step "campaign: default mix, $MIX"
python3 -m pyfy_fuzz run --device cuda --budget "$MIX" --workers "$WORKERS" \
  --corpus /tmp/c-mix --json "$OUT/mix.json" --progress plain >/tmp/mix.log 2>&1
echo "run rc $?" >>/tmp/mix.log
tail -n 40 /tmp/mix.log >>"$LOG"

if [ "$AOT" != 0 ]; then
  step "campaign: aot_eager, $AOT"
  python3 -m pyfy_fuzz run --device cuda --backend aot_eager --budget "$AOT" \
    --workers "$WORKERS" --corpus /tmp/c-aot --json "$OUT/aot.json" --progress plain \
    >/tmp/aot.log 2>&1
  echo "run rc $?" >>/tmp/aot.log
  tail -n 30 /tmp/aot.log >>"$LOG"
fi

if [ "$BENCH" != 0 ]; then
  step "bench: cudagraph family on cuda"
  timeout 110 python3 -m pyfy_fuzz bench --device cuda --families cudagraph --programs 4 \
    --inductor-programs 4 --backends aot_eager,inductor --overhead-backend inductor \
    --rss-minutes 0 --workers "$WORKERS" --json "$OUT/bench.json" >>"$LOG" 2>&1
  echo "bench rc $?" | tee -a "$LOG"
fi

if [ "$REPROS" = 1 ]; then
  step "each new entry's repro.py alone, 8 at a time"
  skip=""
  [ "$KNOWN" = 1 ] && skip="--skip-known corpus"
  dirs=""
  for c in /tmp/c-mix /tmp/c-aot; do [ -d "$c" ] && dirs="$dirs $c"; done
  # shellcheck disable=SC2086  # word lists on purpose
  timeout 240 python3 benchmarks/run_repros.py --jobs 8 --timeout 100 $skip $dirs \
    >"$OUT/repros.txt" 2>>"$LOG"
  tail -n 5 "$OUT/repros.txt" >>"$LOG"
fi

step "pack"
cp /tmp/mix.log /tmp/c-mix/campaign.log 2>/dev/null
cp /tmp/aot.log /tmp/c-aot/campaign.log 2>/dev/null
tar czf "$OUT/corpora.tgz" --exclude=trace --exclude=.campaign --exclude=hypothesis -C /tmp c-mix c-aot 2>>"$LOG"

ls -la "$OUT" >>"$LOG"
step "done"
