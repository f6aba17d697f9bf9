# The kit's test runner: the tests of tests.list (tab-separated, '-' for an empty field) (the build's ctest tree, written by
# make_test_list.py) that a step selects, run as ctest would run them, without ctest.
# Sourced by kit-check.sh, which sets KIT, OUT and STEP_BUDGET_S.

declare -A test_outcome   # test name -> passed | failed | skipped | sampled (for DEPENDS)
declare -A python_module  # module -> yes | no

has_python_module() {
  if [[ -z ${python_module[$1]:-} ]]; then
    python_module[$1]=no
    python3 -c "import $1" >/dev/null 2>&1 && python_module[$1]=yes
  fi
  [[ ${python_module[$1]} == yes ]]
}

# skip_reason RANKS DEPENDS NEEDS: why a selected test cannot run here (empty: it can).
skip_reason() {
  local ranks=$1 depends=$2 needs=$3 dep need missing=()
  if ((ranks > 2)); then
    echo "needs more than 2 ranks (the kit runs 1-2 ranks per GPU)"
    return
  fi
  for dep in ${depends//,/ }; do
    [[ ${test_outcome[$dep]:-} == sampled ]] &&
      { echo "not run: needs a test CHECK_ONE_PER_PROGRAM did not run"; return; }
    [[ ${test_outcome[$dep]:-} == passed ]] || { echo "needs $dep, which did not pass here"; return; }
  done
  for need in ${needs//,/ }; do
    if [[ $need == python3 ]]; then
      command -v python3 >/dev/null || { echo "no python3 on this machine"; return; }
    elif ! has_python_module "${need#module:}"; then
      missing+=("${need#module:}")
    fi
  done
  ((${#missing[@]} == 0)) || echo "python3 lacks ${missing[*]}"
}

# run_one_test LOG TIMEOUT WORKDIR ENV COMMAND: the test's exit status (124/137: timed out).
run_one_test() {
  local log=$1 timeout=$2 workdir=$3 env_words cmd
  eval "env_words=($4)"
  eval "cmd=($5)"
  mkdir -p "$KIT/$workdir"
  (cd "$KIT/$workdir" && exec env "${env_words[@]}" timeout -k 10 "$timeout" "${cmd[@]}") \
    </dev/null >"$log" 2>&1
}

# The tests that decide most about a device, run first in their step; the rest follow while the
# step's time lasts: the kernels, the PyTorch reference, stage equivalence, mixed precision,
# checkpoints, the communicator and the host staging of MPI collectives.
DECISIVE_TESTS='^(test_(kernel_gradients|kernel_properties|gemm|flash_attention|vocab_parallel|column_sums|quantize|torch_reference|zero_equivalence|mixed_precision|bf16_accumulation|checkpoint|communicator|mpi_staging))'

# decisive_first: tests.list with the decisive tests first, each group in its listed order.
decisive_first() {
  grep -v '^#' "$KIT/tests.list" | awk -F'\t' -v pat="$DECISIVE_TESTS" '$1 ~ pat'
  grep -v '^#' "$KIT/tests.list" | awk -F'\t' -v pat="$DECISIVE_TESTS" '$1 !~ pat'
}

# test_program COMMAND_TEXT: the kit program a test runs (the first of bin/ but the launcher), else
# the command's first word (a script).
test_program() {
  local words word
  read -ra words <<<"$1"
  for word in "${words[@]}"; do
    word=${word//\"/}
    if [[ $word == '$KIT/bin/'* && $word != */mpiexec* ]]; then
      echo "${word##*/}"
      return
    fi
  done
  echo "${words[0]//\"/}"
}

# run_step_tests STEP SELECT: runs the tests for which `SELECT LABELS` succeeds; sets result
# (pass, FAIL, INCOMPLETE or skipped: why) and detail; one log per test in $LOGS/STEP/.
run_step_tests() {
  local step=$1 select=$2 dir=$LOGS/$1 start=$SECONDS
  local name labels ranks timeout skip_rc depends needs workdir env_text cmd_text reason rc t0 capped
  local passed=0 failed_names=() budget_names=() program
  local -A reasons sampled
  mkdir -p "$dir"
  printf 'test\toutcome\tseconds\treason\n' >"$dir/tests.tsv"
  while IFS=$'\t' read -r -u 3 name labels ranks timeout skip_rc depends needs workdir env_text cmd_text; do
    [[ -z $name || $name == '#'* ]] && continue
    [[ $skip_rc == - ]] && skip_rc=
    [[ $depends == - ]] && depends=
    [[ $needs == - ]] && needs=
    [[ $env_text == - ]] && env_text=
    "$select" ",$labels," || continue
    reason=$(skip_reason "$ranks" "$depends" "$needs")
    if [[ -z $reason && ${CHECK_ONE_PER_PROGRAM:-0} == 1 ]]; then
      program="$(test_program "$cmd_text") at $ranks rank(s)"
      if [[ -n ${sampled[$program]:-} ]]; then
        reason="not run: CHECK_ONE_PER_PROGRAM ran another test of its program"
      else
        sampled[$program]=1
      fi
    fi
    # A test needs a few seconds at least; `timeout 0` would mean no limit at all.
    if [[ -z $reason ]] && ((STEP_BUDGET_S - (SECONDS - start) < 3)); then
      budget_names+=("$name")
      reason="not run: the step's budget of $STEP_BUDGET_S s was spent"
    fi
    if [[ -n $reason ]]; then
      test_outcome[$name]=skipped
      [[ $reason == *CHECK_ONE_PER_PROGRAM* ]] && test_outcome[$name]=sampled
      reasons[$reason]=$((${reasons[$reason]:-0} + 1))
      printf '%s\tskipped\t0\t%s\n' "$name" "$reason" >>"$dir/tests.tsv"
      continue
    fi
    # No test runs past the step's budget: a device call ends at its limit, logs and all.
    capped=
    ((timeout > STEP_BUDGET_S - (SECONDS - start))) && capped=1 timeout=$((STEP_BUDGET_S - (SECONDS - start)))
    t0=$SECONDS
    run_one_test "$dir/$name.log" "$timeout" "$workdir" "$env_text" "$cmd_text"
    rc=$?
    if ((rc == 0)); then
      test_outcome[$name]=passed; passed=$((passed + 1)); reason=
    elif [[ -n $skip_rc && $rc == "$skip_rc" ]]; then
      test_outcome[$name]=skipped; reason="skipped itself (exit $rc)"
      reasons[$reason]=$((${reasons[$reason]:-0} + 1))
    elif [[ -n $capped ]] && ((rc == 124 || rc == 137)); then
      test_outcome[$name]=skipped; budget_names+=("$name")
      reason="stopped at the step's budget of $STEP_BUDGET_S s"
      reasons[$reason]=$((${reasons[$reason]:-0} + 1))
    else
      test_outcome[$name]=failed; failed_names+=("$name")
      reason="exit $rc"; ((rc == 124 || rc == 137)) && reason="timed out after $timeout s"
    fi
    printf '%s\t%s\t%s\t%s\n' "$name" "${test_outcome[$name]}" $((SECONDS - t0)) "$reason" >>"$dir/tests.tsv"
    echo "  $step: $name: ${test_outcome[$name]} ($((SECONDS - t0)) s)${reason:+: $reason}"
  done 3< <(decisive_first)
  summarize_step_tests "$passed" "${#failed_names[@]}" "${#budget_names[@]}" reasons "${failed_names[@]}"
}

# summarize_step_tests PASSED FAILED OVER_BUDGET REASONS_ARRAY FAILED_NAMES...: result, detail.
summarize_step_tests() {
  local passed=$1 failed=$2 over=$3 reason text= skipped=0
  local -n counts=$4
  shift 4
  for reason in "${!counts[@]}"; do
    skipped=$((skipped + counts[$reason]))
    text+="${text:+; }${counts[$reason]} $reason"
  done
  detail="$passed passed"
  ((failed)) && detail+=", $failed failed: ${*:1:8}"
  ((failed > 8)) && detail+=" and $((failed - 8)) more (logs/$step/tests.tsv)"
  ((skipped)) && detail+=", $skipped skipped ($text)"
  if ((failed)); then
    result=FAIL
  elif ((over)); then
    result=INCOMPLETE
  elif ((passed == 0)); then
    result="skipped: no test can run here"
  else
    result=pass
  fi
}

# unselected_tests: the tests no step runs, counted by their labels (workflow and Slurm tests
# need the source tree or Slurm, fuzzing is the host's, kit_bare_check is the host's proof).
unselected_tests() {
  local name labels rest text= total=0
  local -A count
  while IFS=$'\t' read -r name labels rest; do
    [[ -z $name || $name == '#'* ]] && continue
    select_unit ",$labels," || select_mpi ",$labels," || count[$labels]=$((${count[$labels]:-0} + 1))
  done <"$KIT/tests.list"
  for labels in "${!count[@]}"; do
    total=$((total + count[$labels]))
    text+="${text:+, }$labels ${count[$labels]}"
  done
  ((total)) && echo "$total tests are not run from the kit (labels: $text): workflow and Slurm tests need the source tree and Slurm, fuzzing and the kit's own check are the host's."
}
