# The steps of check.sh. Each sets result (pass, FAIL, INCOMPLETE or "skipped: why") and detail
# (for the table), and writes its logs in $LOGS/STEP/. Sourced by kit-check.sh.

gpu_name() {  # the first GPU's name, empty without one
  command -v nvidia-smi >/dev/null || return 0
  nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1
}

# can_run KIND: 0 when this machine runs the step; else sets result and detail.
# KIND: build (the kit's programs: a cuda kit needs a GPU) or cuda (a GPU and a cuda kit).
can_run() {
  if [[ -z $GPU && ($1 == cuda || $FLAVOR == cuda) ]]; then
    result="skipped: no GPU"
  elif [[ $1 == cuda && $FLAVOR != cuda ]]; then
    result="skipped: the $FLAVOR kit has no CUDA"
  else
    return 0
  fi
  return 1
}

# The seconds left to the running step (kit-check.sh sets STEP_BUDGET_S and STEP_START), at least
# 1: every command in a step runs under timeout(1) with this, and `timeout 0` would mean none.
step_left() {
  local left=$((STEP_BUDGET_S - (SECONDS - STEP_START)))
  echo $((left > 0 ? left : 1))
}
bounded() { timeout -k 5 "$(step_left)" "$@"; }  # bounded COMMAND...: inside the step's time

# One rank by the launch path the env step found working: mpiexec -n 1, or a singleton (the
# program started alone) where only that worked. Every run sets comm.timeout_s=60: a hang ends
# inside its step.
zm1() {
  local launch=("$KIT/bin/mpiexec" -n 1)
  [[ $(cat "$WORK/launch" 2>/dev/null) == singleton ]] && launch=()
  bounded "${launch[@]}" "$KIT/bin/zeromini" "$@"
}
zm_run() { zm1 run "$@" --set comm.timeout_s=60; }
zm_tool() { timeout -k 5 60 "$KIT/bin/zeromini" "$@"; }  # inspect, export: no MPI launch
# Whether the kit's build has the inspect module (zeromini inspect and export): "yes" or "".
has_inspect() { "$KIT/bin/zeromini" --help 2>/dev/null | grep -Eq '^ +inspect ' && echo yes; }

# The CUDA driver and toolkit libraries a cuda kit leaves to the device.
device_library='^(libcuda\.so|libcudart|libcublas|libcublasLt|libnccl|libnvidia)'

step_env() {
  local log=$LOGS/env/env.log file name missing=() expected=() count=0
  {
    echo "## KIT-INFO"; cat "$KIT/KIT-INFO"
    echo "## uname"; uname -a
    echo "## nvidia-smi"; nvidia-smi 2>&1 || echo "(no nvidia-smi)"
    echo "## nvcc"; nvcc --version 2>&1 || echo "(no nvcc)"
    echo "## NCCL"; ldconfig -p 2>/dev/null | grep -i libnccl || echo "(no libnccl in the loader's cache)"
    echo "## device libraries found outside the loader's paths"; echo "${DEVICE_LIBRARIES_FOUND:-(none)}"
    echo "## LD_LIBRARY_PATH"; echo "${LD_LIBRARY_PATH:-(unset)}"
    echo "## zeromini --version"; "$KIT/bin/zeromini" --version 2>&1
  } >"$log" 2>&1
  for file in "$KIT"/bin/* "$KIT"/lib/* $(find "$KIT/build" -name '*.so'); do
    [[ -L $file ]] && continue
    count=$((count + 1))
    echo "## ldd $file" >>"$LOGS/env/ldd.log"
    ldd "$file" >>"$LOGS/env/ldd.log" 2>&1
    while read -r name; do
      if [[ $FLAVOR == cuda && -z $GPU && $name =~ $device_library ]]; then
        [[ " ${expected[*]} " == *" $name "* ]] || expected+=("$name")
      else
        missing+=("${file#$KIT/}: $name")
      fi
    done < <(ldd "$file" 2>&1 | awk '/not found/ {print $1}')
  done
  detail="$count files resolved by ldd; GPU: ${GPU:-none}"
  can_run build && detail+="; $(probe_launch)"
  [[ -n $GPU ]] && detail+="; driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  ((${#expected[@]})) && detail+="; left to the device: ${expected[*]}"
  [[ -n ${DEVICE_LIBRARIES_FOUND:-} ]] && detail+="; found: $DEVICE_LIBRARIES_FOUND"
  if ((${#missing[@]})); then
    result=FAIL detail+="; not found: ${missing[*]:0:6}"
  elif can_run build && [[ ! -s $WORK/launch ]]; then
    result=FAIL detail+="; zeromini runs neither under mpiexec nor alone (logs/env/probe-*.log)"
  else
    result=pass
  fi
}

# probe_launch: a 1-step run at 2 ranks under mpiexec (MPI backend: NCCL refuses two ranks on one
# GPU) and one started alone (a singleton), each within 45 s; the later steps use the first path
# that worked ($WORK/launch). Prints what it found.
probe_launch() {
  local common=(--set train.steps=1 --set comm.backend=mpi --set comm.timeout_s=20) path status
  local -A works
  for path in mpiexec singleton; do
    local launch=("$KIT/bin/mpiexec" -n 2)
    [[ $path == singleton ]] && launch=()
    timeout -k 5 45 "${launch[@]}" "$KIT/bin/zeromini" run "$KIT/inputs/tiny-test.toml" \
      "${common[@]}" --out "$WORK/probe-$path" >"$LOGS/env/probe-$path.log" 2>&1
    status=$?
    works[$path]=$([[ $status == 0 ]] && echo yes || echo "no (exit $status)")
  done
  if [[ ${works[mpiexec]} == yes ]]; then
    echo mpiexec >"$WORK/launch"
  elif [[ ${works[singleton]} == yes ]]; then
    echo singleton >"$WORK/launch"
  fi
  echo "launch: mpiexec -n 2 ${works[mpiexec]}, singleton ${works[singleton]}"
}

# Labels are given as ,a,b,: the command-line and unit tests; the multi-rank tests.
select_unit() { [[ ($1 == *,unit,* || $1 == *,cli,*) && $1 != *,workflow,* && $1 != *,slurm,* ]]; }
select_mpi() {
  [[ $1 == *,mpi,* && $1 != *,unit,* && $1 != *,cli,* && $1 != *,workflow,* && $1 != *,slurm,* ]]
}
step_unit() { can_run build && run_step_tests unit select_unit; }
step_mpi() { can_run build && run_step_tests mpi select_mpi; }

# step_lines LOG: "step N loss L |g| G" per logged step, to compare runs.
step_lines() { sed -n 's/^\[stage [0-9]\] step *\([0-9]*\)\/[0-9]* *loss *\([^ ]*\) *|g| *\([^ ]*\).*/step \1 loss \2 |g| \3/p' "$1"; }
# param_norm CHECKPOINT: its parameter norm (inspect); nothing in a build without inspect.
param_norm() {
  [[ -n $(has_inspect) ]] || return 0
  zm_tool inspect "$1" 2>&1 | sed -n 's/^ *parameter norm *//p'
}

# nccl: one rank on NCCL and one on MPI, a tiny deck on the kit's token shard: equal losses (and
# final parameter norms, where the build has inspect).
step_nccl() {
  can_run cuda || return
  local dir=$LOGS/nccl backend lines=8 compared="losses and gradient norms"
  [[ -n $(has_inspect) ]] && lines=9 compared="losses, gradient norms and the final parameter norm"
  local common=(--set train.steps=8 --set output.log_every=1 --set output.checkpoint_every=8
    --set data.source="$KIT/data/readme-tokens.bin" --set model.vocab=256)
  for backend in nccl mpi; do
    zm_run "$KIT/inputs/tiny-test.toml" "${common[@]}" --set comm.backend=$backend \
      --out "$WORK/nccl-$backend" >"$dir/$backend.log" 2>&1 ||
      { result=FAIL detail="the $backend run failed (logs/nccl/$backend.log)"; return; }
    step_lines "$dir/$backend.log" >"$dir/$backend.steps"
    param_norm "$WORK/nccl-$backend/checkpoints/step_00000008.h5" >>"$dir/$backend.steps"
  done
  if [[ $(wc -l <"$dir/mpi.steps") -lt $lines ]]; then
    result=FAIL detail="found no step lines or parameter norm in logs/nccl/mpi.log"
  elif diff "$dir/nccl.steps" "$dir/mpi.steps" >"$dir/diff.txt"; then
    result=pass detail="8 steps: $compared equal (NCCL vs MPI, 1 rank)"
  else
    result=FAIL detail="NCCL and MPI differ (logs/nccl/diff.txt)"
  fi
}

# bf16: 6 steps with checkpoints, a resume from step 3 into a new directory, which must repeat
# steps 4-6 exactly; where the build has inspect, inspect of the results and the checkpoint (the
# parameter norms of both runs equal) and export.
step_bf16() {
  can_run build || return
  local dir=$LOGS/bf16 deck=$KIT/inputs/tiny-test.toml
  local common=(--set train.precision=bf16 --set train.steps=6 --set output.log_every=1
    --set output.checkpoint_every=3)
  zm_run "$deck" "${common[@]}" --out "$WORK/bf16-full" >"$dir/full.log" 2>&1 ||
    { result=FAIL detail="the bf16 run failed (logs/bf16/full.log)"; return; }
  zm_run "$deck" "${common[@]}" --set train.resume="$WORK/bf16-full/checkpoints/step_00000003.h5" \
    --out "$WORK/bf16-resumed" >"$dir/resumed.log" 2>&1 ||
    { result=FAIL detail="the resumed bf16 run failed (logs/bf16/resumed.log)"; return; }
  step_lines "$dir/full.log" | sed -n '/^step [456] /p' >"$dir/full.steps"
  step_lines "$dir/resumed.log" >"$dir/resumed.steps"
  local full_norm resumed_norm
  if [[ -z $(has_inspect) ]]; then
    if [[ $(wc -l <"$dir/full.steps") -ne 3 ]] || ! diff "$dir/full.steps" "$dir/resumed.steps" >"$dir/diff.txt"; then
      result=FAIL detail="the resumed run does not repeat steps 4-6 (logs/bf16/diff.txt)"
    else
      result=pass detail="resume from step 3 repeats steps 4-6 (loss, |g|); no inspect or export in this build"
    fi
    return
  fi
  zm_tool inspect "$WORK/bf16-full/results.h5" >"$dir/inspect-results.log" 2>&1
  zm_tool inspect "$WORK/bf16-full/checkpoints/step_00000006.h5" >"$dir/inspect-checkpoint.log" 2>&1
  zm_tool export "$WORK/bf16-full/checkpoints/step_00000006.h5" "$WORK/gpt2.h5" >"$dir/export.log" 2>&1
  full_norm=$(param_norm "$WORK/bf16-full/checkpoints/step_00000006.h5")
  resumed_norm=$(param_norm "$WORK/bf16-resumed/checkpoints/step_00000006.h5")
  if [[ $(wc -l <"$dir/full.steps") -ne 3 ]] || ! diff "$dir/full.steps" "$dir/resumed.steps" >"$dir/diff.txt"; then
    result=FAIL detail="the resumed run does not repeat steps 4-6 (logs/bf16/diff.txt)"
  elif [[ -z $full_norm || $full_norm != "$resumed_norm" ]]; then
    result=FAIL detail="final parameter norms differ: $full_norm vs $resumed_norm"
  elif ! grep -Eq 'status +completed' "$dir/inspect-results.log"; then
    result=FAIL detail="inspect of results.h5 (logs/bf16/inspect-results.log)"
  elif ! grep -q 'tensors exported' "$dir/export.log" || [[ ! -s $WORK/gpt2.h5 ]]; then
    result=FAIL detail="export failed (logs/bf16/export.log)"
  else
    result=pass detail="resume from step 3 repeats steps 4-6 (loss, |g|, parameter norm $full_norm); inspect and export work"
  fi
}

# sanitize: compute-sanitizer's memcheck on a 1-step tiny run. racecheck (step racecheck) is far
# slower and runs only when named.
step_sanitize() { run_sanitizer sanitize memcheck; }
step_racecheck() { run_sanitizer racecheck racecheck; }
run_sanitizer() {  # run_sanitizer STEP TOOL
  can_run cuda || return
  command -v compute-sanitizer >/dev/null ||
    { result="skipped: compute-sanitizer unavailable"; return; }
  local step=$1 tool=$2 dir=$LOGS/$1 errors status
  bounded compute-sanitizer --tool "$tool" "$KIT/bin/zeromini" run "$KIT/inputs/tiny-test.toml" \
    --set train.steps=1 --set comm.backend=mpi --set comm.timeout_s=60 \
    --out "$WORK/sanitize-$tool" >"$dir/$tool.log" 2>&1
  status=$?
  errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$dir/$tool.log" | tail -1)
  if ((status == 124 || status == 137)); then
    result=INCOMPLETE detail="$tool: stopped at the step's budget"
  elif [[ -z $errors ]]; then
    result="skipped: not supported on this machine"
    detail="$tool: $(grep -m1 -E 'Error|error|not supported' "$dir/$tool.log" | cut -c1-80)"
  elif ((errors > 0 || status != 0)); then
    result=FAIL detail="$tool: $errors errors, exit $status (logs/$step/$tool.log)"
  else
    result=pass detail="$tool: 0 errors on one step"
  fi
}

# perf: scripts/gpu-bench.sh (GPT-2 124M, 8 x 1024 tokens: PyTorch first, then zeromini at stages 0
# and 3 in fp32/tf32/bf16, bf16 with the reference attention, bf16 stage 3 with ZeRO-Offload of
# the optimizer and the parameters, a traced run, bf16 stage 3 with the optimizer state on NVMe),
# in the same call,
# inside the step's time; gpu-bench rewrites logs/perf/table.md after every run.
step_perf() {
  can_run cuda || return
  local dir=$LOGS/perf status runs expected=9
  GPU_BENCH_OUT=$dir bounded bash "$KIT/scripts/gpu-bench.sh" "$KIT/bin/zeromini" \
    "$KIT/bench/torch_gpt_ref.py" >"$dir/gpu-bench.log" 2>&1
  status=$?
  runs=$(grep -c '^zeromini .* tokens/s (median' "$dir/gpu-bench.log")
  if ((status == 124 || status == 137)); then
    result=INCOMPLETE detail="stopped at the step's budget ($runs of $expected zeromini runs measured; the table below)"
  elif ((runs < expected)); then
    result=FAIL detail="$runs of $expected zeromini runs measured (logs/perf/gpu-bench.log)"
  elif grep -q 'not available; no side-by-side' "$dir/gpu-bench.log"; then
    result=INCOMPLETE detail="$expected runs measured; no PyTorch reference on this machine"
  elif [[ ! -s $dir/trace.json ]]; then
    result=FAIL detail="$expected runs measured beside PyTorch, but the traced run wrote no trace.json"
  else
    result=pass detail="$expected runs beside PyTorch, and a trace: the table below"
  fi
}
