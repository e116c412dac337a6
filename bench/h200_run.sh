#!/bin/bash
# One device call: environment, verification, benchmark, sanitizers, pytest.
# Usage (device tool, repo root, carry bench/artifacts): bash bench/h200_run.sh [stages]
# Stages (default: env verify bench sanitize pytest): env verify bench sanitize pytest sparse step
# bf16 pool mma mma_sanitize proto proto_sanitize ncu sass decode_ab kernels serving_ab serving. (step needs `python bench/step_h200.py build bench/artifacts/step_h200`,
# bf16 `python bench/bf16_h200.py build`, pool `python bench/pool_scaling_h200.py build bench/artifacts/pool_h200`,
# mma `python bench/mma_h200.py build`.) Logs under $OUT (at most 8 files come back from a device call).
set -u
export PYTHONPATH=python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/poot_out}; mkdir -p "$OUT"
STAGES=${*:-env verify bench sanitize pytest}
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
for s in $STAGES; do case $s in
env)
  stamp env
  { date -u; nvidia-smi; python3 -V; python3 -c "import torch, numpy; print('torch', torch.__version__, torch.version.cuda, 'numpy', numpy.__version__)";
    python3 -m pip show cuda-bindings cuda-python ml_dtypes 2>/dev/null | grep -E '^(Name|Version)';
    compute-sanitizer --version | tail -1; ncu --version | tail -1; uname -r; } > "$OUT/env.txt" 2>&1
  cat "$OUT/env.txt" | grep -E "H200|Driver|torch|Version|Python" | head -12 ;;
verify)
  stamp verify
  timeout 180 python3 bench/verify_h200.py --json "$OUT/verify.json" > "$OUT/verify.log" 2>&1; echo "verify rc=$?"
  grep -E "^(FAIL|[0-9]+ cases)" "$OUT/verify.log"; grep -c "^PASS" "$OUT/verify.log" ;;
bench)
  stamp bench
  timeout 330 python3 bench/attention_h200.py --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
  tail -12 "$OUT/bench.log" ;;
sanitize)
  for tool in memcheck racecheck initcheck synccheck; do
    stamp "sanitizer $tool"
    echo "=== $tool" >> "$OUT/sanitizer.log"
    timeout ${SANITIZE_S:-75} compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 30 \
      python3 bench/verify_h200.py --no-torch --no-graph >> "$OUT/sanitizer.log" 2>&1
    rc=$?; echo "=== $tool rc=$rc" >> "$OUT/sanitizer.log"; echo "$tool rc=$rc"
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^=== |cases," "$OUT/sanitizer.log" ;;
sparse)
  stamp sparse
  timeout 400 python3 bench/sparse_h200.py --json "$OUT/sparse.json" > "$OUT/sparse.log" 2>&1; echo "sparse rc=$?"
  tail -14 "$OUT/sparse.log" ;;
bf16)
  stamp bf16
  timeout 400 python3 bench/bf16_h200.py run --json "$OUT/bf16.json" > "$OUT/bf16.log" 2>&1; echo "bf16 rc=$?"
  tail -9 "$OUT/bf16.log" ;;
mma)
  stamp "mma (two-byte prefill on tensor cores vs float64 and SDPA; needs python bench/mma_h200.py build)"
  timeout 200 python3 bench/mma_h200.py run --artifacts "${MMA_ARTIFACTS:-bench/artifacts}" --json "$OUT/mma.json" > "$OUT/mma.log" 2>&1
  echo "mma rc=$?"; grep -cE "ok=True" "$OUT/mma.log"; grep -E "ok=False|ERROR|sdpa/poot" "$OUT/mma.log" | cut -c1-220 ;;
mma_sanitize)
  # The tensor-core prefill's small checks under memcheck and racecheck (MMA_ARTIFACTS: one build).
  for tool in memcheck racecheck; do
    stamp "mma $tool"
    timeout 150 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 --print-limit 30 \
      python3 bench/mma_h200.py run --artifacts "${MMA_ARTIFACTS:-bench/artifacts}" \
      --only "${MMA_ONLY:-one_tile_bf16,causal_odd_bf16_mma,paged_live_bf16,split_key_live_f16,chunk_alibi_bf16}" \
      >> "$OUT/mma_sanitizer.log" 2>&1
    echo "mma $tool rc=$?"
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|ok=False" "$OUT/mma_sanitizer.log" | head ;;
pytest)
  stamp pytest
  timeout 60 python3 -m pytest -q -p no:cacheprovider test/python/test_cuda_runtime.py > "$OUT/pytest.log" 2>&1; echo "pytest rc=$?"
  tail -3 "$OUT/pytest.log" ;;
step)
  stamp "step (whole decoder step: CUDA graphs, device tensors, vs torch)"
  timeout 120 python3 -m pytest -q -p no:cacheprovider test/python/test_cuda_program.py > "$OUT/step_pytest.log" 2>&1
  echo "step pytest rc=$?"; tail -3 "$OUT/step_pytest.log"
  timeout 300 python3 -X faulthandler bench/step_h200.py run bench/artifacts/step_h200 > "$OUT/step.json" 2> "$OUT/step.log"
  echo "step rc=$?"; tail -3 "$OUT/step.log"; grep -E "ms|launches|GBps" "$OUT/step.json"
  # Kernel memory errors only: cuda-python's cuGetProcAddress probes are API errors by design.
  timeout 150 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    python3 bench/step_h200.py verify bench/artifacts/step_h200 > "$OUT/step_memcheck.log" 2>&1
  echo "step memcheck rc=$?"; tail -2 "$OUT/step_memcheck.log" ;;
pool)
  stamp "pool (paged decode step against the pool size)"
  timeout 200 python3 bench/pool_scaling_h200.py run bench/artifacts/pool_h200 > "$OUT/pool.json" 2> "$OUT/pool.log"
  echo "pool rc=$?"; tail -6 "$OUT/pool.log" ;;
proto)
  stamp proto
  timeout 200 python3 bench/proto_h200.py --only "${PROTO_ONLY:-}" --json "$OUT/proto.json" > "$OUT/proto.log" 2>&1; echo "proto rc=$?"
  grep -E "best" "$OUT/proto.log" ;;
proto_sanitize)
  for tool in memcheck racecheck; do
    stamp "proto $tool"
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 bench/proto_h200.py \
      --ncu ${PROTO_CASE:-decode_w8_u4_p1_h1_f1:33:decode_b1_4k} >> "$OUT/proto_sanitizer.log" 2>&1
    echo "proto $tool rc=$?"
  done
  grep -E "SUMMARY" "$OUT/proto_sanitizer.log" ;;
ncu)
  stamp ncu
  M=dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sector_hit_rate.pct,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,smsp__sass_inst_executed_op_global_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active
  SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
  prof() {  # prof LOG ARGS...: with the extra metrics, else (unknown metric) without
    timeout 150 ncu --clock-control none $SECTIONS --metrics $M "$@" > /tmp/ncu1.log 2>&1; rc=$?
    if [ $rc -ne 0 ] && grep -qi "metric" /tmp/ncu1.log; then
      echo "(retry without --metrics: $(grep -i metric /tmp/ncu1.log | head -2))" >> "$OUT/ncu.log"
      timeout 150 ncu --clock-control none $SECTIONS "$@" > /tmp/ncu1.log 2>&1; rc=$?
    fi
    cat /tmp/ncu1.log >> "$OUT/ncu.log"; echo "ncu $* rc=$rc"
  }
  prof -k regex:"${NCU_KERNELS:-partials|stream}" --launch-count ${NCU_LAUNCHES:-6} python3 bench/ncu_target.py ${NCU_CASES:-decode_b1_32k@default decode_b1_32k@cu528 decode_b16_8k@default}
  for c in ${NCU_PROTO-decode_w4_u8:66:decode_b1_32k decode_w4_u8:4:decode_b16_8k}; do
    prof -k regex:partials --launch-count 1 python3 bench/proto_h200.py --ncu $c
  done
  grep -E "dram__bytes_read|lts__t_sectors_srcunit|l1tex__t_sector_hit|Duration|Achieved Occupancy|Memory Throughput|==PROF==|==ERROR==" "$OUT/ncu.log" | head -60 ;;
decode_ab)
  # Whole decode steps: $DS_ARTIFACTS against the baseline build $DS_BASE (decode_step_h200.py build).
  stamp "decode steps ${DS_ARTIFACTS:-bench/artifacts/ds} vs ${DS_BASE:-none}"
  POOT_BENCH_BASELINE=${DS_BASE:-} timeout ${DS_S:-240} python3 bench/decode_step_h200.py run \
    ${DS_ARTIFACTS:-bench/artifacts/ds} ${DS_CASES:-verify_bf16 verify_bf16_b12 llama8b_bf16 llama8b_bf16_b16} \
    > "$OUT/decode_ab.json" 2> "$OUT/decode_ab.log"; echo "decode_ab rc=$?"
  grep -E '^\{"case"|"ok"|Error' "$OUT/decode_ab.log" | cut -c1-600 ;;
kernels)
  # Per-kernel GPU time of one step (no graph) of each case in $KT_CASES.
  for c in ${KT_CASES:-llama8b_bf16 llama8b_bf16_b16}; do
    stamp "kernel times $c"
    # Launched plainly: a dependent kernel's time would include its wait for the one before.
    POOT_CUDA_DEPENDENT_LAUNCH=0 timeout 90 python3 bench/kernel_times.py ${DS_ARTIFACTS:-bench/artifacts/ds} $c > "$OUT/kernels_$c.json" 2>> "$OUT/kernels.log"
    echo "kernels $c rc=$?"; python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get('kernel_us_per_step'))" "$OUT/kernels_$c.json"
  done ;;
serving_ab)
  # The serving bench's steps, the same artifacts launched plainly and with PDL.
  for pdl in 0 1; do
    stamp "serving steps, dependent launch $pdl"
    POOT_CUDA_DEPENDENT_LAUNCH=$pdl timeout 150 python3 bench/causal_lm_serving_steps.py ${SERVING_ARTIFACTS:-bench/artifacts/serving} \
      > "$OUT/serving_steps_pdl$pdl.json" 2>> "$OUT/serving.log"; echo "serving steps pdl=$pdl rc=$?"
  done ;;
serving)
  stamp serving
  timeout ${SERVING_S:-300} python3 bench/causal_lm_serving.py --target cuda --phase run --artifacts ${SERVING_ARTIFACTS:-bench/artifacts/serving} \
    > "$OUT/serving.json" 2>> "$OUT/serving.log"; echo "serving rc=$?"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: v for k, v in d.items() if not isinstance(v, (dict, list))})" "$OUT/serving.json" | cut -c1-900 ;;
sass)
  stamp sass
  { for f in bench/artifacts/verify/gqa_decode-split-cubin/*.ptx bench/artifacts/proto/decode_w4_u8.cubin; do
      echo "##### $f"; cuobjdump --dump-sass "$f"; done; } > "$OUT/sass.txt" 2>&1
  echo "sass rc=$?"; grep -cE "LDG" "$OUT/sass.txt" ;;
esac; done
stamp done
