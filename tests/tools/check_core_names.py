#!/usr/bin/python3
"""The core names no module: no file of src/ outside src/modules/ mentions a module's name, the
other names its module.cmake gives (NAMES), or one of its deck keys. A module plugs into the
interfaces the core defines; a core that names one is a core that knows it.

    tests/tools/check_core_names.py REPO

Prints every mention (file:line: the name) and exits 1 if there is any.
"""
import os
import re
import sys


def declarations(modules_dir):
    """(module name, [names]) for every src/modules/*/module.cmake: the folder's name, its spaced
    and hyphenated forms, the NAMES and the KEYS of its zm_module() call."""
    out = []
    for name in sorted(os.listdir(modules_dir)):
        path = os.path.join(modules_dir, name, "module.cmake")
        if not os.path.isfile(path):
            continue
        text = re.sub(r"#[^\n]*", "", open(path, encoding="utf-8").read())
        call = text[text.find("zm_module(") + len("zm_module("):]
        # The call ends at the first ")" outside quotes (a DESCRIPTION may hold parentheses).
        call = re.match(r'(?:"[^"]*"|[^")])*', call).group(0)
        names = {name, name.replace("_", " "), name.replace("_", "-")}
        field = None
        for token in re.findall(r'"[^"]*"|[^\s"]+', call):
            if token in ("DESCRIPTION", "KEYS", "NAMES", "PROVIDES", "REQUIRES"):
                field = token
            elif field in ("KEYS", "NAMES"):
                names.add(token.strip('"'))
        out.append((name, sorted(n for n in names if n)))
    return out


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else "."
    src = os.path.join(repo, "src")
    modules = declarations(os.path.join(src, "modules"))
    patterns = [(module, n, re.compile(r"(?<![A-Za-z0-9_])" + re.escape(n) + r"(?![A-Za-z0-9_])",
                                       re.IGNORECASE)) for module, names in modules for n in names]
    found = 0
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if os.path.join(root, d) != os.path.join(src, "modules"))
        for f in sorted(files):
            if not f.endswith((".cpp", ".hpp", ".h", ".c", ".txt", ".cmake")):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, repo)
            for number, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                for module, name, pattern in patterns:
                    if pattern.search(line):
                        print(f"{rel}:{number}: names the module {module} ({name!r}): "
                              f"{line.strip()}")
                        found += 1
    print(f"check_core_names: {len(modules)} modules, {found} mentions in the core")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
