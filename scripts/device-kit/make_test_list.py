#!/usr/bin/env python3
"""Rewrites a build's ctest tree for the device kit (scripts/device-kit.sh).

    make_test_list.py SOURCE_DIR BUILD_DIR KIT_DIR TESTS_JSON

TESTS_JSON is `ctest --show-only=json-v1` of BUILD_DIR. Every host path in the tests is mapped
into the kit: the build's bin/ to KIT/bin, the build tree to KIT/build, the source tree to KIT,
MPICH's mpiexec to KIT/bin/mpiexec, the configure-time python3 to the python3 on PATH, `cmake -E
env` to env. Writes:
  KIT/build/**/CTestTestfile.cmake   the ctest tree, paths relative to each file (ctest runs it)
  KIT/tests.list                     one test per line for check.sh, which needs no ctest
and copies the source files the tests name (scripts, decks) into KIT. Exits 1 naming any
absolute path it cannot map, so that no host path is left in the kit.
"""
import json
import os
import re
import shlex
import shutil
import sys

FIELDS = "name labels ranks timeout skip_rc depends needs workdir env command".split()
PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable)


class PathMap:
    """Host paths to kit-relative paths (None: not a path of the build or the sources)."""

    def __init__(self, source, build):
        self.source, self.build = os.path.realpath(source), os.path.realpath(build)
        self.prefixes = [(os.path.join(self.build, "bin"), "bin"), (self.build, "build"),
                         (self.source, "")]

    def to_kit(self, path):
        if not path.startswith("/"):
            return None
        if os.path.basename(path) in ("mpiexec", "mpiexec.hydra", "mpirun") and \
                not path.startswith(self.source):
            return "bin/mpiexec"
        for host, kit in self.prefixes:
            if path == host or path.startswith(host + "/"):
                return os.path.normpath(os.path.join(kit, os.path.relpath(path, host)))
        return None


def is_python(word):
    return word in PYTHONS or re.fullmatch(r"/\S*/python3(\.\d+)?", word) is not None


def map_word(word, paths, unmapped):
    """One argument or VAR=value as shell text: its host paths become "$KIT"/relative."""
    if "=" in word and not word.startswith("/"):
        var, value = word.split("=", 1)
        return shlex.quote(var + "=") + map_word(value, paths, unmapped)
    if is_python(word):
        return "python3"
    rel = paths.to_kit(word)
    if rel is not None:
        return '"$KIT"/' + shlex.quote(rel)
    unmapped.update(HOST_PATH.findall(word))
    return shlex.quote(word)


HOST_PATH = re.compile(r"(?<![\w.*\]])/(?:usr|work|home|opt|tmp|root|var|srv)/[^\s\"';]*")


def unwrap_cmake_env(command):
    """`cmake -E env A=b PROG...` -> `env A=b PROG...` (the kit carries no cmake)."""
    for i, word in enumerate(command):
        if os.path.basename(word) == "cmake" and command[i + 1:i + 3] == ["-E", "env"]:
            return command[:i] + ["env"] + command[i + 3:]
    return command


def properties(test):
    return {p["name"]: p["value"] for p in test.get("properties", [])}


IMPORT = re.compile(r"^\s*(?:import\s+([\w.]+(?:\s*,\s*[\w.]+)*)|from\s+(\w+)[\w.]*\s+import)", re.M)
PY_NAME = re.compile(r"([\w-]+\.py)\b")


def python_needs(files, source):
    """Third-party modules imported by the Python files a test runs (and the scripts they name)."""
    seen, modules, todo = set(), set(), [f for f in files if os.path.isfile(f)]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        text = open(path, encoding="utf-8", errors="replace").read()
        here = os.path.dirname(path)
        for name in PY_NAME.findall(text):  # scripts named by this one, beside it or in scripts/
            for folder in (here, os.path.join(source, "scripts")):
                if os.path.isfile(os.path.join(folder, name)):
                    todo.append(os.path.join(folder, name))
        if not (path.endswith(".py") or "python" in text):
            continue
        for group in IMPORT.findall(text):
            for name in ",".join(group).split(","):
                top = name.strip().split(".")[0]
                if top and top not in sys.stdlib_module_names and \
                        not os.path.isfile(os.path.join(here, top + ".py")):
                    modules.add(top)
    return sorted(modules), bool(seen and any(p.endswith(".py") for p in seen))


def test_needs(command, env, source):
    """What a test needs beyond the kit: python3 and the modules its scripts import."""
    words = command + [e.split("=", 1)[1] for e in env if "=" in e]
    files = [w for w in words if w.endswith((".py", ".sh")) and w.startswith(source)]
    modules, runs_python_file = python_needs(files, source)
    if modules or runs_python_file or any(is_python(w) for w in words):
        return ["python3"] + ["module:" + m for m in modules]
    return []


# What the kit runner carries into tests.list, and what only matters when ctest runs tests side by
# side: check.sh runs them one at a time, so a lock or a serial flag holds by itself.
CARRIED = {"LABELS", "PROCESSORS", "TIMEOUT", "SKIP_RETURN_CODE", "DEPENDS", "ENVIRONMENT",
           "WORKING_DIRECTORY"}
SERIAL_ONLY = {"RUN_SERIAL", "RESOURCE_LOCK", "RESOURCE_GROUPS", "COST"}


def ranks_of(props, base_env):
    """The ranks a test starts: its PROCESSORS count each rank's threads (OMP_NUM_THREADS of the
    tests' environment), and the kit runs 1-2 ranks per GPU."""
    threads = 1
    for entry in base_env + props.get("ENVIRONMENT", []):
        if entry.startswith("OMP_NUM_THREADS="):
            threads = max(1, int(entry.split("=", 1)[1] or 1))
    return max(1, int(props.get("PROCESSORS", 1)) // threads)


def list_line(test, paths, unmapped, base_env, source, ignored):
    props = properties(test)
    command = unwrap_cmake_env(test["command"])
    env = base_env + props.get("ENVIRONMENT", [])
    workdir = paths.to_kit(props.get("WORKING_DIRECTORY", paths.build)) or "build"
    needs = test_needs(command, env, source)
    row = {
        "name": test["name"],
        "labels": ",".join(props.get("LABELS", [])),
        "ranks": str(ranks_of(props, base_env)),
        "timeout": str(int(props.get("TIMEOUT", 1500))),
        "skip_rc": str(props.get("SKIP_RETURN_CODE", "")),
        "depends": ",".join(props.get("DEPENDS", [])),
        "needs": ",".join(needs),
        "workdir": workdir,
        "env": " ".join(map_word(e, paths, unmapped) for e in env),
        "command": " ".join(map_word(w, paths, unmapped) for w in command),
    }
    extra = set(props) - CARRIED - SERIAL_ONLY
    if extra:
        # Packing never fails on a property: the test runs without it, and the packer says so.
        print(f"make_test_list: {test['name']}: ignoring properties the kit runner does not "
              f"handle: {', '.join(sorted(extra))}", file=sys.stderr)
    ignored.update(set(props) & SERIAL_ONLY)
    # One test per line, fields split at tabs: a field holding either would be read as others.
    broken = [f for f in FIELDS if "\n" in row[f] or "\t" in row[f]]
    if broken:
        sys.exit(f"make_test_list: {test['name']}: its {', '.join(broken)} holds a newline or a "
                 "tab, which tests.list (a line per test, tab-separated) cannot carry; write the "
                 "test without one (e.g. one regular expression per line of output)")
    # "-" for an empty field: a shell's read joins consecutive tabs.
    return "\t".join(row[f] or "-" for f in FIELDS)


def build_folders(build):
    """(folder, files) of the build tree, not descending into a kit packed there earlier (the
    kit_bare_check test packs one inside the build): its copy of the test files names its own
    folders."""
    for folder, dirs, files in os.walk(build):
        dirs[:] = [d for d in dirs if not d.startswith("device-kit-")]
        yield folder, files


def test_include_environment(build):
    """The set(ENV{X} v) lines of the files ctest includes before the tests (TEST_INCLUDE_FILES)."""
    env = []
    for folder, files in build_folders(build):
        if "CTestTestfile.cmake" not in files:
            continue
        text = open(os.path.join(folder, "CTestTestfile.cmake")).read()
        for included in re.findall(r'^include\("([^"]+)"\)', text, re.M):
            for line in open(included):
                m = re.fullmatch(r"set\(ENV\{(\w+)\} (\S*)\)\s*", line)
                if m:
                    env.append(f"{m.group(1)}={m.group(2)}")
                elif line.strip():
                    sys.exit(f"make_test_list: {included}: cannot carry line: {line.strip()}")
    return env


def rewrite_ctest_file(path, paths, kit, unmapped):
    """A CTestTestfile.cmake (or a file it includes) with its paths relative to its own place."""
    rel_file = paths.to_kit(path)
    here = os.path.dirname(rel_file)

    def repl(match):
        word = match.group(1)
        if is_python(word):
            return "python3"
        if os.path.basename(word) == "cmake":
            return "cmake"
        rel = paths.to_kit(word)
        if rel is None:
            unmapped.add(word)
            return word
        return "${CMAKE_CURRENT_LIST_DIR}/" + os.path.relpath(rel, here or ".")

    text = open(path).read()
    text = re.sub(r"^# (Source|Build) directory: .*$", r"# \1 directory: (device kit)", text, flags=re.M)
    text = re.sub(r'(?<=["=;])(/[^"\s;]*)', repl, text)
    os.makedirs(os.path.join(kit, here), exist_ok=True)
    with open(os.path.join(kit, rel_file), "w") as out:
        out.write(text)


def rewrite_ctest_tree(paths, kit, unmapped):
    for folder, files in build_folders(paths.build):
        if "CTestTestfile.cmake" not in files or "CMakeFiles" in folder:
            continue
        path = os.path.join(folder, "CTestTestfile.cmake")
        rewrite_ctest_file(path, paths, kit, unmapped)
        for included in re.findall(r'^include\("([^"]+)"\)', open(path).read(), re.M):
            rewrite_ctest_file(included, paths, kit, unmapped)


def copy_named_sources(tests, paths, kit):
    """Every file of the source tree a test names (scripts, decks, README.md), and of the build
    tree its tool libraries (*.so outside bin/; bin/ is the packer's). Not the other files of the
    build tree a test names: those are what tests wrote where tests ran before the packing (a
    reference holding this machine's paths, an export), and the kit's own run makes them again."""
    for test in tests:
        words = test["command"] + [e.split("=", 1)[-1] for e in properties(test).get("ENVIRONMENT", [])]
        for word in words:
            rel = paths.to_kit(word)
            if rel is None or rel.startswith("bin/") or not os.path.isfile(word):
                continue
            if rel.startswith("build/") and not rel.endswith(".so"):
                continue
            os.makedirs(os.path.join(kit, os.path.dirname(rel)), exist_ok=True)
            shutil.copy2(word, os.path.join(kit, rel))


def main():
    source, build, kit, tests_json = sys.argv[1:5]
    paths = PathMap(source, build)
    tests = json.load(open(tests_json))["tests"]
    unbuilt = [t["name"] for t in tests if "command" not in t]
    if unbuilt:
        # ctest leaves out the command of a test whose program it cannot find: the build is not
        # complete (the test programs are one per tests/ directory: bin/tests_<directory>).
        sys.exit(f"make_test_list: {len(unbuilt)} tests have no program in {build}/bin (build "
                 f"every target first: cmake --build {build}): " + " ".join(unbuilt))
    os.makedirs(kit, exist_ok=True)
    unmapped = set()
    base_env = test_include_environment(paths.build)
    ignored = set()
    lines = [list_line(t, paths, unmapped, base_env, paths.source, ignored) for t in tests]
    if ignored:
        print("make_test_list: not needed when tests run one at a time, so not carried: " +
              ", ".join(sorted(ignored)))
    with open(os.path.join(kit, "tests.list"), "w") as out:
        out.write("# " + "\t".join(FIELDS) + "\n" + "\n".join(lines) + "\n")
    rewrite_ctest_tree(paths, kit, unmapped)
    copy_named_sources(tests, paths, kit)
    if unmapped:
        sys.exit("make_test_list: host paths the kit cannot map: " + " ".join(sorted(unmapped)))
    print(f"make_test_list: {len(lines)} tests")


if __name__ == "__main__":
    main()
