#!/usr/bin/env python3
"""Checks the house layout rules: every source or script file opens with one line naming its job,
no source file outside engine/src/kernels is over 500 lines, no function is over 80 lines.

Usage: tools/check_layout.py [FILE...]
  With no FILE: every file git tracks (C++, Python, shell, CMake), from the repository root.
  Prints one `path:line: problem` per violation; exits 1 if there is any, 0 if none, 2 on bad use.
Function lengths are found cheaply: Python through its syntax tree; C++ by matching braces after a
`)` outside any function (so a lambda or a local class counts toward the function around it).
"""
import ast
import os
import re
import subprocess
import sys

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
KERNELS = "engine/src/kernels/"  # hot loops may be long: exempt from the file limit
CPP = (".cpp", ".hpp", ".h", ".cc", ".c")
SCRIPT = (".py", ".sh", ".cmake")
EXCLUDED_DIRS = ("tests/data/",)  # fixtures and goldens, not sources


def is_checked(path):
    name = os.path.basename(path)
    if any(path.startswith(d) for d in EXCLUDED_DIRS):
        return False
    return path.endswith(CPP + SCRIPT) or name == "CMakeLists.txt"


def tracked_files():
    out = subprocess.run(["git", "ls-files"], check=True, capture_output=True, text=True).stdout
    return [p for p in out.splitlines() if is_checked(p) and os.path.isfile(p)]


def first_content_line(lines):
    """Index of the first line that is not a shebang, an encoding line or blank."""
    i = 0
    if i < len(lines) and lines[i].startswith("#!"):
        i += 1
    while i < len(lines) and (not lines[i].strip() or re.match(r"#.*coding[:=]", lines[i])):
        i += 1
    return i


def job_line_problem(path, lines):
    i = first_content_line(lines)
    if i >= len(lines):
        return "empty file: open with one line naming its job"
    line = lines[i].strip()
    if path.endswith(CPP):
        ok = line.startswith("//") or line.startswith("/*")
        want = "a // comment"
    elif path.endswith(".py"):
        ok = line.startswith("#") or line.startswith('"""') or line.startswith("'''")
        want = "a # comment or a docstring"
    else:
        ok = line.startswith("#")
        want = "a # comment"
    text = line.lstrip("/*#\"' ").strip()
    if not ok or len(text) < 8:
        return "the first line must name the file's job (%s), not %r" % (want, line[:60])
    return None


def strip_cpp(text):
    """The text with comments, string and char literals blanked (newlines kept, so lines still count)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator: 1'000
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def cpp_long_functions(text):
    """(first line, length) of each function body longer than MAX_FUNCTION_LINES."""
    code = strip_cpp(text)
    found, stack, line, head = [], [], 1, []  # stack: (kind, start line); head: text since the last ; { }
    for c in code:
        if c == "\n":
            line += 1
        if c == "{":
            if any(k == "func" for k, _ in stack):
                kind = "other"
            else:
                h = re.sub(r"\s+", " ", "".join(head))
                if re.search(r"\bnamespace\b|extern \"", h):
                    kind = "ns"
                elif re.search(r"\b(class|struct|union|enum)\b", h) and ")" not in h:
                    kind = "class"
                elif re.search(r"\)\s*(const|override|final|noexcept|mutable|->[^{]*|:.*)?\s*$", h):
                    kind = "func"
                else:
                    kind = "other"
            stack.append((kind, line))
            head = []
        elif c == "}":
            if stack:
                kind, start = stack.pop()
                if kind == "func" and line - start + 1 > MAX_FUNCTION_LINES:
                    found.append((start, line - start + 1))
            head = []
        elif c == ";":
            head = []
        elif c != "\n" or head:
            head.append(c)
    return found


def py_long_functions(text, path):
    try:
        tree = ast.parse(text, path)
    except SyntaxError as e:
        return [(e.lineno or 1, -1)]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append((node.lineno, length))
    return out


def check(path, where=None):
    """Problems of the file at `where` (default: path), judged by its repository path `path`."""
    try:
        with open(where or path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        return ["%s:1: cannot read: %s" % (path, e)]
    lines = text.splitlines()
    problems = []
    p = job_line_problem(path, lines)
    if p:
        problems.append("%s:1: %s" % (path, p))
    if not path.startswith(KERNELS) and len(lines) > MAX_FILE_LINES and path.endswith(CPP + (".py",)):
        problems.append("%s:%d: %d lines, over %d: split it by job" % (path, len(lines), len(lines), MAX_FILE_LINES))
    if path.endswith(CPP):
        longs = cpp_long_functions(text)
    elif path.endswith(".py"):
        longs = py_long_functions(text, path)
    else:
        longs = []
    for start, length in longs:
        if length < 0:
            problems.append("%s:%d: does not parse as Python" % (path, start))
        else:
            problems.append("%s:%d: function of %d lines, over %d" % (path, start, length, MAX_FUNCTION_LINES))
    return problems


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    if not argv:
        os.chdir(root)
    files = argv or tracked_files()
    problems = []
    for path in files:
        if not os.path.isfile(path):
            print("tools/check_layout.py: no such file: %s" % path, file=sys.stderr)
            return 2
        problems += check(os.path.relpath(os.path.abspath(path), root) if root else path, path)
    for p in problems:
        print(p)
    if problems:
        print("%d layout problem(s)" % len(problems), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
