#!/usr/bin/env python3
"""Every link and every repository path that a Markdown page names exists.

    check_doc_links.py REPO_ROOT PAGE.md...

Checked in each page:
  - Markdown links [text](target) to files of the repository (relative to the page), with their
    #anchor where given; links to a page's own headings (#anchor);
  - paths in `code spans` that start with a top-level directory of the repository (scripts/,
    inputs/, tests/, results/, src/, cmake/, miniapp/, .ci/), the first word of the span; spans
    with placeholders (<...>, *, {...}, $VAR, ...) are not paths and are skipped.
Prints every miss as PAGE:LINE: what, and exits 1 if there was one.
"""
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`]+)`")
TOP = ("scripts/", "inputs/", "tests/", "results/", "src/", "cmake/", "miniapp/", ".ci/")
PLACEHOLDER = re.compile(r"[<>*{}$]|\.\.\.|XXX")


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as page:
        return {slug(line.lstrip("#")) for line in page if re.match(r"^#{1,6} ", line)}


def check(root, page_path):
    misses = []
    here = os.path.dirname(page_path)
    own = anchors(page_path)
    in_fence = False
    with open(page_path, encoding="utf-8") as page:
        for number, line in enumerate(page, 1):
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target):
                    continue  # http:, https:, mailto:
                file_part, _, anchor = target.partition("#")
                if not file_part:
                    if anchor not in own:
                        misses.append(f"{page_path}:{number}: no heading for #{anchor}")
                    continue
                linked = os.path.normpath(os.path.join(here, file_part))
                if not os.path.exists(linked):
                    misses.append(f"{page_path}:{number}: link to missing {file_part}")
                elif anchor and linked.endswith(".md") and anchor not in anchors(linked):
                    misses.append(f"{page_path}:{number}: {file_part} has no heading #{anchor}")
            if in_fence:
                continue
            for span in CODE.findall(line):
                word = span.split()[0] if span.split() else ""
                if not word.startswith(TOP) or PLACEHOLDER.search(word):
                    continue
                word = word.rstrip(".,;:)")
                if not os.path.exists(os.path.join(root, word)):
                    misses.append(f"{page_path}:{number}: names missing path {word}")
    return misses


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    misses = []
    for page in argv[2:]:
        misses += check(root, page)
    for miss in misses:
        print(miss)
    print(f"check_doc_links: {len(argv) - 2} page(s), {len(misses)} miss(es)")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
