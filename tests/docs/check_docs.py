#!/usr/bin/env python3
"""Checks README.md and docs/*.md as a reader meets them.

  check_docs.py links ROOT
      every relative link resolves to a file or directory in the tree, and every #anchor to a
      heading of the file it points into;
  check_docs.py snippets ROOT CXX CC INCLUDE_DIR WORK_DIR
      every ```cpp and ```c block compiles as shown with -Wall -Wextra -Werror (C++20, C11).

Prints one line per problem and exits 1 if there was any.
"""
import pathlib
import re
import subprocess
import sys

LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)\s*$")


def documents(root):
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def anchor(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, fenced = set(), False
    for line in path.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.add(anchor(line.lstrip("#")))
    return found


def check_links(root):
    problems = []
    for doc in documents(root):
        fenced = False
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target):
                    continue  # https:, mailto:
                path, _, fragment = target.partition("#")
                resolved = (doc.parent / path).resolve() if path else doc
                where = f"{doc.relative_to(root)}:{number}"
                if not resolved.exists():
                    problems.append(f"{where}: broken link {target}")
                elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
                    problems.append(f"{where}: no heading for #{fragment} in {path or doc.name}")
    return problems


def blocks(path):
    """(language, first line number, text) of every fenced block."""
    language, start, lines = None, 0, []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = FENCE.match(line)
        if match and language is None:
            language, start, lines = match.group(1), number + 1, []
        elif match:
            yield language, start, "\n".join(lines) + "\n"
            language = None
        elif language is not None:
            lines.append(line)


def check_snippets(root, cxx, cc, include, work):
    work.mkdir(parents=True, exist_ok=True)
    problems, count = [], 0
    for doc in documents(root):
        for language, line, text in blocks(doc):
            if language not in ("cpp", "c++", "c"):
                continue
            count += 1
            is_c = language == "c"
            source = work / f"{doc.stem}_{line}.{'c' if is_c else 'cc'}"
            source.write_text(text)
            compiler = [cc, "-std=c11"] if is_c else [cxx, "-std=c++20"]
            command = compiler + ["-Wall", "-Wextra", "-Werror", "-I", str(include), "-c",
                                  str(source), "-o", str(source.with_suffix(".o"))]
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                lines = result.stderr.strip().splitlines() or ["(no message)"]
                first = next((l for l in lines if "error" in l), lines[0])
                problems.append(f"{doc.relative_to(root)}:{line}: does not compile: {first}")
    if count == 0:
        problems.append("no C or C++ block found")
    print(f"{count} snippets compiled")
    return problems


def main(argv):
    if len(argv) >= 3 and argv[1] == "links":
        problems = check_links(pathlib.Path(argv[2]).resolve())
    elif len(argv) == 7 and argv[1] == "snippets":
        problems = check_snippets(pathlib.Path(argv[2]).resolve(), argv[3], argv[4],
                                  pathlib.Path(argv[5]), pathlib.Path(argv[6]))
    else:
        print("usage: check_docs.py links ROOT | snippets ROOT CXX CC INCLUDE_DIR WORK_DIR",
              file=sys.stderr)
        return 2
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
