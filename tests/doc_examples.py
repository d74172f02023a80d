#!/usr/bin/env python3
# Runs every command block of README.md and docs/*.md as written, and checks what the text promises.
"""Every fenced block of README.md and docs/*.md is accounted for here:

* `sh` blocks: each command (continuation lines joined, `# comments` dropped) runs through bash in a
  scratch directory that links the repository's models/, tests/, examples/ and tools/, with the
  build's bin/ first on PATH (so `ordo` is the built binary). Placeholders (`DIR`, `FILE`, ...) take
  the values of PLACEHOLDERS; a synopsis runs without its optional groups and with each group
  `[--flag a|b]` alone, as `--flag a`. A command must exit 0, leave every output it names after
  -o/--json/--html/--plot, and print what EXPECT says (and the doc's own table where it shows the
  numbers: TABLE_CHECKS). SHORTENED commands run with flags appended, each with its reason.
* `python` blocks run with the built module on PYTHONPATH (`--kind python`).
* Everything else (a command that cannot run in a test, a C++ fragment, shown output) is in
  EXCLUDED or OTHER_BLOCKS with a reason. A command or block that is neither runnable nor listed
  fails the test, and so does a table entry no doc uses any more: the docs cannot drift from it.

* The `cpp` blocks of README.md and docs/library.md are compiled as one program (`--write-cpp FILE`
  writes it; CMake builds it as doc_cpp_examples) and run by DocExamples.Cpp.

Usage: doc_examples.py --build BUILD_DIR [--kind sh|python|all] | --write-cpp FILE
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))

# Placeholder -> value, applied as whole words to every command (scratch-directory relative).
PLACEHOLDERS = {
    "T5DIR": "tests/data/fixtures/t5",            # an encoder-decoder with --ids (no tokenizer needed)
    "DIR": "models/stories260K",                  # the bundled model
    "FILE": "tests/data/text/stories-sampled.txt",
    "OUT": "out-int8",                            # a new directory
    "PREFIX": "prefix",
}
# The same placeholder meaning another model in some commands.
PLACEHOLDERS_FOR = {
    # A chat template is needed: the bundled model with a real one (made by make_files).
    "printf 'Hi\\nAnd then?\\n' | ordo chat -m DIR --system \"Be brief\"": {"DIR": "chat-model"},
    "ordo run -m DIR --chat -p \"Hi\"": {"DIR": "chat-model"},
}

# Commands the test does not run, each with its reason (the command as the doc writes it).
EXCLUDED = {
    "bash tools/dev.sh demo": "installs Debian packages and builds: the step that built this test",
    "bash tools/dev.sh test": "runs the whole suite, this test included",
    "bash tools/dev.sh setup": "installs Debian packages (apt-get, as root)",
    "bash tools/dev.sh fuzz": "the clang fuzz build and 13 fuzzers x 30 s (about 15 minutes)",
    "bash tools/dev.sh fuzz 7200": "a deep fuzz run: hours",
    "ordo compare --json compare.json --html compare.html":
        "the whole zoo, every probe: about 10 minutes (CompareCli.QuickZooRun runs the zoo quickly)",
    "ordo compare --html report.html":
        "the whole zoo, every probe: about 10 minutes (CompareCli tests check the HTML)",
    "ordo compare --pairs my-pairs.jsonl":
        "the whole zoo, every probe: about 10 minutes (--pairs is tested by CompareCli tests)",
    "ordo run -m OPUSDIR -p \"Hello\" --num-beams 4 --num-return-sequences 2":
        "needs an opus-mt model with its tokenizer (hundreds of MB, not in the repository); beam "
        "search is held to Hugging Face on the marian fixture by BeamSearch tests",
    "tools/perf/peak_rss.sh build/bin/ordo \"$HOME/.cache/ordo-peak-rss\" 1b":
        "writes a 1.1B-parameter model in four formats (GBs) and loads each: many minutes",
    "ordo serve -m DIR --port 8080 --parallel 8":
        "a server runs until stopped; tests/serve (ctest -L serve) starts it on a free port and tests every route",
    "python3 -m venv --system-site-packages .venv": "creates the venv for the pip install below (excluded)",
    ".venv/bin/python -m pip install --no-build-isolation ./python":
        "builds the module from scratch through pip (minutes); python/tests covers an installed "
        "package (ORDO_PYTHON_INSTALLED=1)",
}

# Commands run with flags appended: (flags, reason). Each still runs the code path the doc shows.
BENCH_QUICK = "bench times the machine, and its full runs take minutes each: --quick, one repetition of short prompts"
TINY = "--synthetic 128,2,4,4,256,512"  # a 2-layer Llama shape of ~0.4M parameters
SHORTENED = {
    "ordo bench": ("--quick", BENCH_QUICK),
    "ordo bench --synthetic 1b --dtypes int8": ("--quick", BENCH_QUICK),
    "ordo bench --dtypes int8 --kv-dtype int8": ("--quick", BENCH_QUICK),
    "ordo bench -m DIR --json out.json": ("--quick", BENCH_QUICK),
    "ordo bench [--synthetic 110m] [--json out.json]": ("--quick", BENCH_QUICK),
    "ordo bench --parallel 1,4,16,64 --ctx-lengths 128": (
        f"--quick {TINY}", "64 sequences of 128 tokens on the 110M model take 2 minutes even with --quick: "
        "the batch paths on a tiny synthetic model"),
    "ordo bench --batch 1,4,16,64 --contexts 128": (
        f"--quick {TINY}", "64 sequences of 128 tokens on the 110M model take 2 minutes even with --quick: "
        "the batch paths on a tiny synthetic model"),
    "ordo bench --parallel 1,4,16 --ctx-lengths 128": (
        f"--quick {TINY}", "16 sequences of 128 tokens on the 110M model: the batch paths on a tiny model"),
    "ordo compare --no-zoo -m models/stories260K --position none --position alibi": (
        "--ctx-multiples 1,2", "the length probe at 4x-16x of stories260K's 512 tokens is 7/8 of the run's "
        "6.5 minutes on a busy 2-core machine (2.5 CPU-minutes); 1x and 2x run the same code"),
}

# Blocks that are not commands, by (file, first line): a reason each.
OTHER_BLOCKS = {
    ("docs/reports.md", "ordo compare: 3 of 36 models: lm/learned-s1 (elapsed 1 s, ETA 11 s)"):
        "a line of progress output as a log shows it (ReportProgress tests check its format)",
    ("docs/performance.md", "phase       ctx batch backend   dtype  tok/s(med) tok/s(best)  roofline bound          achieved        limit  arith"):
        "output of `ordo bench` on the 110M model: machine-dependent figures",
    ("docs/adding-a-scheme.md", "// xPos: RoPE with an exponential decay split between queries (× ζ^(p/γ)) and keys (× ζ^(-p/γ))."):
        "a sketch of a new scheme's file, with elided bodies",
    ("docs/adding-a-scheme.md", "#define ORDO_POSITION_SCHEMES(X) \\"): "an excerpt of a registry list, elided",
    ("docs/adding-a-scheme.md", "struct PositionConfig {"): "an excerpt of a struct, elided",
    ("docs/adding-a-scheme.md", "s.position.scheme = \"xpos\";"): "two lines of a family file, out of context",
}

def jsonl_with(*keys):
    """A check: every stdout line is a JSON object holding `keys`."""
    def check(out):
        lines = out.splitlines()
        return bool(lines) and all(set(keys) <= set(json.loads(l)) for l in lines)
    check.__doc__ = f"JSON lines with {', '.join(keys)}"
    return check


# The C++ blocks of CPP_DOCS are compiled as one program, each block in its own scope after the one
# before it, and run by DocExamples.Cpp (--write-cpp). Names the fragments use without defining
# them, declared before the block that starts with the key.
CPP_PREAMBLE = {
    "ordo::StepTimes t;": [
        'std::vector<std::string> prompts = {"Once upon a time", "The dog"};',
        "auto on_piece = [](size_t, const std::string&) { return true; };",
    ],
}
CPP_DOCS = ["README.md", "docs/library.md"]


def write_cpp(path):
    """CPP_DOCS' C++ blocks as one program: the first block's statements open main(), every
    later block runs in a scope of its own that sees them."""
    includes, body, k = ["#include <iostream>", "#include <string>", "#include <vector>"], [], 0
    for doc in CPP_DOCS:
        for n, lang, lines in blocks(doc):
            if lang != "cpp":
                continue
            first = next((l for l in lines if l.strip()), "")
            includes += [l for l in lines if l.startswith("#include")]
            code = CPP_PREAMBLE.get(first, []) + [l for l in lines if not l.startswith("#include")]
            indent = "  " if k == 0 else "    "
            body += [f"  // {doc}:{n}"] + ([] if k == 0 else ["  {"]) + [indent + l for l in code]
            body += [] if k == 0 else ["  }"]
            k += 1
    path.write_text(
        f"// Generated by tests/doc_examples.py from the C++ blocks of {', '.join(CPP_DOCS)}: compiled as written.\n"
        + "\n".join(dict.fromkeys(includes)) + "\n\nint main() {\n" + "\n".join(body) + "\n  return 0;\n}\n")


NUM = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
# Command -> regexes its stdout must match (multiline); every command must also exit 0.
EXPECT = {
    "ordo sweep status grid": [r"^done 4: 0-3$", r"^missing 0$"],
    "ordo sweep merge grid --json ppl.json --plot ppl.svg": [r"^scaling\s+factor", r"^yarn\s+1\s+none\s+512\s"],
    "ordo compare --quick": [r"lm/rope-s1", r"mlm/alibi-s1", r"\b0\.\d+"],
    "ordo compare --no-zoo -m models/stories260K --position none --position alibi":
        [r"stories260K\[pos=none\]", r"stories260K\[pos=alibi\]", r"\b0\.\d+"],
    "ordo run -p \"Once upon a time\" -n 60 --temp 0": [r"\AOnce upon a time\S*\s+\S+"],
    "ordo run --ids 1,403,407 -n 8 --print-ids": [r"\A\d+(,\d+){7}$"],
    "ordo run --prompts-file prompts.txt --parallel 16 -n 60 --print-ids": [r"Once upon a time", r"The dog", r"\d+(,\d+){5,}"],
    "ordo run --prompts-file prompts.jsonl -n 60": [jsonl_with("prompt", "text", "ids"), r'"Once upon a time"'],
    "ordo inspect -m DIR": [r"llama", r"rope", r"parameters", r"model\.layers\.0\."],
    "ordo tokenize -m DIR \"Hello world\" [--pieces]": [r"\A\d+(,\d+)+\n"],
    "ordo run -p \"Once upon a time\" --stop-id 13 --stop \".\"": [r"\AOnce upon a time"],
    "printf 'Hi\\nAnd then?\\n' | ordo chat -m DIR --system \"Be brief\"": [r"\S"],
    "ordo run -m DIR --chat -p \"Hi\"": [r"\S"],
    "ordo embed -m DIR \"text\" [--pooling mean|cls|last|pooler] [--normalize] [--tokens] [-o out.json|out.npy]": [],
    "ordo embed -m DIR -f texts.txt -o vectors.npy": [],
    "ordo ppl --text FILE --ctx-lengths 512,1024,2048 --scaling none,ntk,yarn": [r"none", r"ntk", r"yarn", rf"\b{NUM}\b"],
    "ordo quantize -m DIR --dtype int8 -o OUT": [],
}
# Outputs a command must leave besides the -o/--json/--html/--plot files it names.
EXPECT_FILES = {
    "ordo quantize -m DIR --dtype int8 -o OUT": ["out-int8/model.safetensors", "out-int8/config.json"],
}
# Commands whose stdout may not hold these (the text promises numbers, not n/a).
FORBID = {
    "ordo compare --quick": [r"no pairs"],
    "ordo compare --no-zoo -m models/stories260K --position none --position alibi": [r"n/a", r"no pairs"],
}
# Commands followed in the doc by a table of the numbers they print: (doc, the table's header
# start, JSON file the command writes) -> each table row's cells against the JSON's ppl, rounded
# as the table rounds.
TABLE_CHECKS = {
    "ordo ppl --text tests/data/text/stories-sampled.txt --ctx-lengths 512,1024,2048,4096 --scaling none,linear,ntk,yarn,dynamic --json ppl.json --plot ppl.svg":
        ("docs/results-long-context.md", "| scaling | 512 |", "ppl.json", None),
    "ordo ppl --text tests/data/text/stories-sampled-long.txt --ctx-lengths 512,1024,2048,4096,8192 --scaling none,ntk,yarn,self-extend,sinks --json ppl.json":
        ("docs/results-long-context.md", "| model | setting | 1x |", "ppl.json", "stories260K"),
}
# Python blocks, by (file, first line) -> regexes their stdout must match.
EXPECT_PYTHON = {
    ("README.md", "import numpy as np, ordo"): [r"\A\S", rf"^word-order margin: {NUM}$"],
    ("docs/python.md", "import numpy as np, ordo"): [],
}

# Files commands read that the docs leave to the reader, made in the scratch directory.
def make_files(work):
    (work / "prompts.txt").write_text("Once upon a time\nThe dog\n")
    (work / "prompts.jsonl").write_text('{"prompt": "Once upon a time"}\n{"prompt": "The dog"}\n')
    (work / "texts.txt").write_text("a sentence\nanother one\n")
    chat = work / "chat-model"  # the bundled model with a real chat template (ChatML)
    chat.mkdir()
    for f in (ROOT / "models" / "stories260K").iterdir():
        (chat / f.name).symlink_to(f)
    (chat / "chat_template.jinja").write_text(
        (ROOT / "tests" / "data" / "chat_templates" / "chatml-openhermes.jinja").read_text())


def blocks(doc):
    """(first line number, language, [lines]) of every fenced block."""
    out, cur = [], None
    for n, line in enumerate((ROOT / doc).read_text().splitlines(), 1):
        m = re.match(r"^\s*```(\S*)", line)
        if m and cur is None:
            cur = (n + 1, m.group(1), [])
        elif m:
            out.append(cur)
            cur = None
        elif cur is not None:
            cur[2].append(line)
    if cur is not None:
        raise SystemExit(f"{doc}:{cur[0]}: unclosed code block")
    return out


def strip_comment(line):
    """The line without a trailing `# comment` (a # after whitespace, outside quotes)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def commands(lines):
    """The commands of an sh block: continuations joined, comments and blank lines dropped."""
    out, cur = [], ""
    for line in lines:
        line = strip_comment(line)
        if line.endswith("\\"):
            cur += line[:-1].strip() + " "
            continue
        cur += line.strip()
        if cur:
            out.append(" ".join(cur.split()))
        cur = ""
    return out


def concrete(cmd):
    """The commands to run for a doc command: placeholders filled; a synopsis with optional groups
    `[--flag a|b]` runs once without them and once with each group alone, as `--flag a`."""
    values = dict(PLACEHOLDERS, **PLACEHOLDERS_FOR.get(cmd, {}))
    groups = re.findall(r"\[([^\]]*)\]", cmd)
    base = " ".join(re.sub(r"\[[^\]]*\]", "", cmd).split())
    out = [base] + [base + " " + re.sub(r"(\S+?)\|\S+", r"\1", g) for g in groups]
    for k, v in values.items():
        out = [re.sub(rf"\b{k}\b", v, c) for c in out]
    if cmd in SHORTENED:
        out = [f"{c} {SHORTENED[cmd][0]}" for c in out]
    return out


def runnable(cmd):
    return all(re.match(r"^(ordo |printf .*\| ordo |python3 examples/)", c) for c in concrete(cmd))


def output_ok(path):
    """A file with bytes in it, or a directory with files in it."""
    return (path.is_file() and path.stat().st_size > 0) or (path.is_dir() and any(path.iterdir()))


def matches(check, out):
    return check(out) if callable(check) else re.search(check, out, re.M) is not None


def named_outputs(cmd):
    try:
        words = shlex.split(cmd)
    except ValueError:
        return []
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--output", "--json", "--html", "--plot")]


def doc_table(doc, header, model):
    """{setting: [cells]} of the doc's table starting with `header` (rows of `model` if given)."""
    lines = (ROOT / doc).read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(header))
    rows, current = {}, None
    for l in lines[start + 2:]:
        if not l.startswith("|"):
            break
        cells = [c.strip() for c in l.strip("|").split("|")]
        if model is None:
            rows[cells[0]] = cells[1:]
        else:
            current = cells[0] or current
            if current == model:
                rows[cells[1]] = cells[2:]
    return rows


def check_table(work, spec):
    doc, header, json_name, model = spec
    table = doc_table(doc, header, model)
    results = json.loads((work / json_name).read_text())["results"]
    errors = []
    if not table:
        return [f"no rows in {doc}'s table '{header}'"]
    for setting, cells in table.items():
        got = [r["ppl"] for r in results if r["scaling"] == setting]
        shown = [f"{p:.2f}" if p is not None else "n/a" for p in got]
        if shown != cells:
            errors.append(f"{doc} table '{header}' row {setting}: doc {cells}, run {shown}")
    return errors


def run_command(cmd, c, where, work, env):
    """Runs one concrete command `c` of the doc command `cmd`; the failures it shows."""
    t = time.time()
    p = subprocess.run(["bash", "-o", "pipefail", "-c", c], cwd=work, env=env, capture_output=True, text=True,
                       timeout=600)
    print(f"ran       {where}  {c}  ({time.time() - t:.1f} s, exit {p.returncode})", flush=True)
    errs = []
    if p.returncode != 0:
        errs.append(f"exit {p.returncode}\n--- stderr:\n{p.stderr[-3000:]}")
    for check in EXPECT.get(cmd, []):
        if not matches(check, p.stdout):
            errs.append(f"stdout does not match {check.__doc__ if callable(check) else '/' + check + '/'}")
    for rx in FORBID.get(cmd, []):
        if re.search(rx, p.stdout, re.M):
            errs.append(f"stdout matches /{rx}/, which the doc does not promise")
    for f in named_outputs(c) + EXPECT_FILES.get(cmd, []):
        if not output_ok(work / f):
            errs.append(f"no output {f}")
    if cmd in TABLE_CHECKS and p.returncode == 0:
        errs += check_table(work, TABLE_CHECKS[cmd])
    if not errs:
        return []
    return [f"{where}: {c}\n  " + "\n  ".join(errs) + f"\n--- stdout (end):\n{p.stdout[-2000:]}"]


def run_python_block(lines, key, where, work, env):
    """Runs a python block in `work`; failures: its exit status and what EXPECT_PYTHON wants of it."""
    t = time.time()
    p = subprocess.run([sys.executable, "-"], input="\n".join(lines), cwd=work, env=env,
                       capture_output=True, text=True, timeout=600)
    print(f"ran       {where}  python block ({time.time() - t:.1f} s, exit {p.returncode})", flush=True)
    errs = [] if p.returncode == 0 else [f"exit {p.returncode}\n--- stderr:\n{p.stderr[-3000:]}"]
    if key not in EXPECT_PYTHON:
        errs.append("no entry in EXPECT_PYTHON (what does this block promise?)")
    for rx in EXPECT_PYTHON.get(key, []):
        if not matches(rx, p.stdout):
            errs.append(f"stdout does not match /{rx}/")
    if not errs:
        return []
    return [f"{where}: python block\n  " + "\n  ".join(errs) + f"\n--- stdout (end):\n{p.stdout[-2000:]}"]


def stale_entries(seen_cmds, seen_blocks):
    """Table entries that no doc uses any more: the docs moved and the test must follow."""
    failures = []
    for table, name in ((EXCLUDED, "EXCLUDED"), (SHORTENED, "SHORTENED"), (EXPECT, "EXPECT"),
                        (FORBID, "FORBID"), (TABLE_CHECKS, "TABLE_CHECKS"), (PLACEHOLDERS_FOR, "PLACEHOLDERS_FOR"),
                        (EXPECT_FILES, "EXPECT_FILES")):
        for k in table:
            if k not in seen_cmds:
                failures.append(f"{name} names '{k}', which no doc's command block holds")
    for table, name in ((OTHER_BLOCKS, "OTHER_BLOCKS"), (EXPECT_PYTHON, "EXPECT_PYTHON")):
        for k in table:
            if k not in seen_blocks:
                failures.append(f"{name} names a block of {k[0]} starting '{k[1]}', which is not there")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", help="the build directory (its bin/ordo and python/ordo)")
    ap.add_argument("--kind", choices=["sh", "python", "all"], default="all")
    ap.add_argument("--write-cpp", metavar="FILE", help="write the C++ blocks of CPP_DOCS as one program and stop")
    args = ap.parse_args()
    if args.write_cpp:
        write_cpp(Path(args.write_cpp))
        return 0
    if not args.build:
        ap.error("--build BUILD_DIR is required")
    build = Path(args.build).resolve()
    kinds = {"sh", "python"} if args.kind == "all" else {args.kind}

    failures, seen_cmds, seen_blocks, ran_at = [], set(), set(), {}
    n_blocks = n_run = n_short = n_excl = n_py = n_cpp = n_other = 0
    with tempfile.TemporaryDirectory(prefix="ordo-doc-examples-") as tmp:
        work = Path(tmp)
        for d in ("models", "tests", "examples", "tools"):
            (work / d).symlink_to(ROOT / d)
        make_files(work)
        env = dict(os.environ, PATH=f"{build / 'bin'}:{os.environ.get('PATH', '')}",
                   PYTHONPATH=f"{build / 'python'}", OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
        env.pop("ORDO_ZOO_DIR", None)

        for doc in DOCS:
            for line_no, lang, lines in blocks(doc):
                n_blocks += 1
                where = f"{doc}:{line_no}"
                first = next((l for l in lines if l.strip()), "")
                key = (doc, first)
                if lang in ("sh", "bash", "shell"):
                    for cmd in commands(lines):
                        seen_cmds.add(cmd)
                        if cmd in EXCLUDED:
                            n_excl += 1
                            print(f"excluded  {where}  {cmd}\n          ({EXCLUDED[cmd]})")
                            continue
                        if not runnable(cmd):
                            failures.append(f"{where}: '{cmd}' is neither runnable here nor in EXCLUDED")
                            continue
                        if "sh" not in kinds:
                            continue
                        if cmd in SHORTENED:
                            print(f"shortened {where}  {cmd}\n          ({SHORTENED[cmd][1]})")
                        n_short += cmd in SHORTENED
                        for c in concrete(cmd):
                            if c in ran_at:  # the same command in two places runs once
                                print(f"same as   {ran_at[c]}  {where}  {c}")
                                continue
                            ran_at[c] = where
                            failures += run_command(cmd, c, where, work, env)
                            n_run += 1
                elif lang == "python":
                    seen_blocks.add(key)
                    if "python" not in kinds:
                        continue
                    n_py += 1
                    failures += run_python_block(lines, key, where, work, env)
                elif lang == "cpp" and doc in CPP_DOCS:
                    n_cpp += 1
                    print(f"compiled  {where}  cpp block (built and run by DocExamples.Cpp)")
                else:
                    seen_blocks.add(key)
                    n_other += 1
                    if key in OTHER_BLOCKS:
                        print(f"not run   {where}  {lang or 'text'} block ({OTHER_BLOCKS[key]})")
                    else:
                        failures.append(f"{where}: a {lang or 'untagged'} block starting '{first}' is "
                                        "neither runnable nor in OTHER_BLOCKS")

    failures += stale_entries(seen_cmds, seen_blocks)

    print(f"\ndoc examples: {n_blocks} blocks in {len(DOCS)} files; {n_run} command lines run for "
          f"{len(seen_cmds) - len(EXCLUDED)} doc commands ({n_short} shortened), {n_excl} excluded, {n_py} python blocks run, "
          f"{n_cpp} C++ blocks compiled by DocExamples.Cpp, {n_other} other blocks listed")
    for f in failures:
        print(f"\nFAILED {f}", file=sys.stderr)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
