"""What the scripts in scripts/ share, one concept per module.

results      the rows of collect.py's CSV (completed runs), and medians over repeats with the
             min-max spread
planned      the planner's CSVs (zeromini plan --format csv) and their join with measurements
plotting     matplotlib set up for files, the figure and axis styles of the plot*.py modes
alternation  configurations measured in alternating rounds: runs the rounds (bench-*.sh,
             zeropp-curves.sh); medians, ratios, markdown tables
bench_*      the reports of the bench-*.sh scripts (python3 -m zeromini_tools.bench_...)
step_log     the median step of a zeromini run's log (gpu-bench.sh)
netns        the tc burst and the /etc/hosts lines of netns-cluster.sh

The scripts in scripts/ import it as a package: Python puts a script's own directory first on
sys.path, so `python3 scripts/plot.py` finds it from any working directory. The shell scripts run
its modules through `tool` of scripts/lib/prologue.sh, which sets PYTHONPATH.
"""
