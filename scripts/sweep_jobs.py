"""Slurm for scripts/sweep.py: the job script of one sweep point (the template's #SBATCH header
with the sweep's own options in place of the template's, and the point's environment and
zeromini arguments before the template's body), the sbatch command, and whether a point's job
is still queued. Standard library only.
"""

import os
import re
import shlex
import shutil
import subprocess

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Options the sweep sets itself; the template's lines for them are replaced. Short forms map to
# the long ones.
_SHORT = {"-J": "--job-name", "-N": "--nodes", "-n": "--ntasks", "-t": "--time",
          "-p": "--partition", "-A": "--account", "-q": "--qos", "-o": "--output",
          "-e": "--error", "-C": "--constraint", "-D": "--chdir", "-c": "--cpus-per-task",
          "-G": "--gpus"}


def _sbatch_option(line):
    """The long option name of an '#SBATCH ...' line, or None for other lines."""
    m = re.match(r"#SBATCH\s+(-{1,2}[A-Za-z-]+)", line)
    if not m:
        return None
    opt = m.group(1)
    return _SHORT.get(opt, opt)


def render_job(point, cfg, point_dir, binary, template_text, template_path):
    slurm = cfg["slurm"]
    header = [
        f"--job-name={point['name']}",
        f"--nodes={point['nodes']}",
        f"--ntasks-per-node={point['ranks_per_node']}",
        f"--time={slurm['time']}",
        f"--output={os.path.join(point_dir, 'slurm-%j.out')}",
    ]
    for key in ("partition", "account", "qos", "constraint"):
        if slurm[key]:
            header.append(f"--{key}={slurm[key]}")
    header = ["#SBATCH " + h for h in header]
    for line in slurm["extra"]:
        line = line.strip()
        header.append(line if line.startswith("#SBATCH") else "#SBATCH " + line)
    ours = {_sbatch_option(h) for h in header}
    # --ntasks would fight --ntasks-per-node; the sweep sets nodes x ranks per node.
    ours.add("--ntasks")

    lines = template_text.splitlines()
    body_start = next((i for i, line in enumerate(lines)
                       if i > 0 and line.strip() and not line.startswith("#")), len(lines))
    out = []
    last_sbatch = max((i for i, line in enumerate(lines[:body_start])
                       if re.match(r"##?SBATCH", line)), default=0)
    for i, line in enumerate(lines[:body_start]):
        if _sbatch_option(line) not in ours:
            out.append(line)
        if i == last_sbatch:
            out.append(f"# Sweep point {point['name']} (scripts/sweep.py, from "
                       f"{os.path.relpath(template_path, REPO_ROOT)}):")
            out.extend(header)
    env = [
        "",
        f"# ---- sweep point {point['name']} ----",
        f"export ZEROMINI_ROOT={shlex.quote(REPO_ROOT)}",
        f"export ZEROMINI_BIN={shlex.quote(binary)}",
        f"export ZEROMINI_OUT={shlex.quote(point_dir)}",
        f"export ZEROMINI_LAUNCHER=${{ZEROMINI_LAUNCHER:-{slurm['launcher']}}}",
    ]
    if slurm["srun_mpi"]:
        env.append(f"export ZEROMINI_SRUN_MPI=${{ZEROMINI_SRUN_MPI:-{slurm['srun_mpi']}}}")
    for k, v in slurm["env"].items():
        env.append(f"export {k}={shlex.quote(v)}")
    args = [point["deck"]]
    for o in point["overrides"]:
        args += ["--set", o]
    env.append("set -- " + " ".join(shlex.quote(a) for a in args))
    env.append("# ---- end of sweep point ----")
    env.append("")
    return "\n".join(out + env + lines[body_start:]) + "\n"


# Slurm.


def sbatch_command(job_script):
    return ["sbatch", "--parsable", job_script]


def queued_job(meta):
    """The job id of a point's job (meta: its point.json) if Slurm still has it pending or
    running, else None."""
    jobs = [j.get("job_id") for j in meta.get("submissions", []) if j.get("mode") == "sbatch"]
    if not jobs or not shutil.which("squeue"):
        return None
    job = jobs[-1]
    try:
        res = subprocess.run(["squeue", "-h", "-j", str(job), "-o", "%T"], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    state = res.stdout.strip()
    if res.returncode == 0 and state and state not in ("COMPLETED", "FAILED", "CANCELLED",
                                                       "TIMEOUT", "OUT_OF_MEMORY",
                                                       "NODE_FAIL", "PREEMPTED"):
        return job
    return None
