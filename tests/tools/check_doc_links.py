#!/usr/bin/env python3
"""Every link and every repository path that a Markdown page names exists.

    check_doc_links.py REPO_ROOT [--contents PAGE.md] [--reachable-from PAGE.md] PAGE.md...

Checked in each page:
  - Markdown links [text](target) to files of the repository (relative to the page), with their
    #anchor where given; links to a page's own headings (#anchor);
  - paths in `code spans` that start with a top-level directory of the repository (scripts/,
    inputs/, tests/, results/, src/, cmake/, miniapp/, .ci/), the first word of the span; spans
    with placeholders (<...>, *, {...}, $VAR, ...) are not paths and are skipped.
With --contents PAGE: every second-level heading (##) of PAGE is linked from its contents list
(the bulleted list of links to its own headings), and the list links nothing else.
With --reachable-from PAGE: every page checked can be reached from PAGE by following Markdown
links between the pages (a link to a directory reaches its README.md), so that no page is lost.
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


def check_contents(page_path):
    """Every ## heading of the page is in its contents list (a list of links to #anchors)."""
    misses = []
    headings = {}
    listed = {}
    in_fence = False
    with open(page_path, encoding="utf-8") as page:
        for number, line in enumerate(page, 1):
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            if line.startswith("## "):
                headings[slug(line[3:])] = number
            match = re.match(r"^\s*[-*] \[[^\]]*\]\(#([^)\s]+)\)\s*$", line)
            if match:
                listed[match.group(1)] = number
    if not listed:
        return [f"{page_path}: no contents list (lines '- [Title](#anchor)')"]
    for anchor, number in headings.items():
        if anchor not in listed:
            misses.append(f"{page_path}:{number}: heading #{anchor} is not in the contents list")
    for anchor, number in listed.items():
        if anchor not in headings:
            misses.append(f"{page_path}:{number}: the contents list names #{anchor}, "
                          "which is no ## heading")
    return misses


def linked_pages(page_path):
    """The Markdown pages of the repository that a page links to."""
    here = os.path.dirname(page_path)
    found = set()
    in_fence = False
    with open(page_path, encoding="utf-8") as page:
        for line in page:
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target):
                    continue
                file_part = target.partition("#")[0]
                if not file_part:
                    continue
                linked = os.path.normpath(os.path.join(here, file_part))
                if os.path.isdir(linked):
                    linked = os.path.join(linked, "README.md")
                if linked.endswith(".md") and os.path.isfile(linked):
                    found.add(os.path.realpath(linked))
    return found


def check_reachable(start, pages):
    seen = {os.path.realpath(start)}
    todo = [os.path.realpath(start)]
    while todo:
        for linked in linked_pages(todo.pop()):
            if linked not in seen:
                seen.add(linked)
                todo.append(linked)
    return [f"{page}: not reachable by links from {start}" for page in pages
            if os.path.realpath(page) not in seen]


def main(argv):
    args = list(argv[1:])
    contents = []
    reachable_from = []
    for option, into in (("--contents", contents), ("--reachable-from", reachable_from)):
        while option in args:
            at = args.index(option)
            into.append(args[at + 1])
            del args[at:at + 2]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = args[0]
    pages = args[1:]
    misses = []
    for page in pages:
        misses += check(root, page)
    for page in contents:
        misses += check_contents(page)
    for start in reachable_from:
        misses += check_reachable(start, pages)
    for miss in misses:
        print(miss)
    print(f"check_doc_links: {len(pages)} page(s), {len(misses)} miss(es)")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
