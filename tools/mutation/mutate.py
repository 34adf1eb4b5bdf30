#!/usr/bin/env python3
"""Mutation check of the test suite: does a small, realistic bug in the
library make some test fail?

The script exports a snapshot of the repository (HEAD by default) into a
scratch directory, configures and builds it once, runs CTest for a green
baseline, then for each mutant of a list (tools/mutation/mutants.txt):
applies it to the snapshot's copy of the file, rebuilds incrementally, runs
CTest with a time limit, and restores the file. A mutant is

  killed    some test failed (or the run timed out),
  survived  every test passed: no test notices the bug,
  invalid   it did not compile (not counted),
  stale     its snippet is no longer in the file, or is there more than
            once without an `occurrence` (not counted).

The score is killed / (killed + survived). The repository's own working
tree is only read, never written. Usage: tools/mutation/README.md.
"""

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class Mutant:
    def __init__(self, ident, line):
        self.id = ident
        self.line = line  # where it starts in the list, for messages
        self.file = None
        self.description = ""
        self.original = None
        self.replacement = None
        self.occurrence = None  # 1-based, when the snippet is there more than once
        self.status = None
        self.detail = ""
        self.seconds = 0.0


def parse_mutants(path):
    """Blocks of `[id]` then `key: value` lines; `#` starts a comment line."""
    mutants, current = [], None
    keys = {"file", "description", "original", "replacement", "occurrence"}
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            header = re.fullmatch(r"\[([A-Za-z0-9_.-]+)\]", stripped)
            if header:
                current = Mutant(header.group(1), number)
                mutants.append(current)
                continue
            key, sep, value = line.partition(":")
            key = key.strip()
            if not sep or key not in keys or current is None:
                sys.exit(f"{path}:{number}: expected [id] or one of {sorted(keys)}: {line}")
            value = value.strip()
            if key == "occurrence":
                current.occurrence = int(value)
            else:
                setattr(current, key, value)
    seen = set()
    for m in mutants:
        where = f"{path}:{m.line}: [{m.id}]"
        if m.id in seen:
            sys.exit(f"{where}: the id is used twice")
        seen.add(m.id)
        if not m.file or m.original is None or m.replacement is None:
            sys.exit(f"{where}: needs file, original and replacement")
        if m.original == m.replacement:
            sys.exit(f"{where}: the replacement equals the original")
    return mutants


def locate(text, mutant):
    """(start, end) of the snippet in text, or an error string. An exact
    match first; else the snippet's tokens with any whitespace between them,
    so that reindenting or rewrapping a line does not lose the mutant."""
    spans = []
    start = text.find(mutant.original)
    while start != -1:
        spans.append((start, start + len(mutant.original)))
        start = text.find(mutant.original, start + 1)
    if not spans:
        pattern = r"\s+".join(re.escape(token) for token in mutant.original.split())
        spans = [(m.start(), m.end()) for m in re.finditer(pattern, text)]
    if mutant.occurrence is not None:
        if mutant.occurrence < 1 or mutant.occurrence > len(spans):
            return f"occurrence {mutant.occurrence} asked, {len(spans)} found"
        return spans[mutant.occurrence - 1]
    if not spans:
        return "snippet not found"
    if len(spans) > 1:
        return f"snippet found {len(spans)} times (give an occurrence)"
    return spans[0]


def run(cmd, cwd=None, timeout=None, log=None):
    """Runs cmd; returns (returncode or 'timeout', combined output). On a
    timeout the whole process group goes (CTest's test processes too)."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace", start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc = "timeout"
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"$ {' '.join(cmd)}\n{out}\n[exit {rc}]\n")
    return rc, out


def export_snapshot(repo, source, dest):
    """The repository at `source` into dest/: `head` or any revision through
    git archive (reads the object store only), or `worktree`: the tracked and
    untracked, not ignored files as they are on disk now (read, not changed)."""
    os.makedirs(dest)
    if source == "worktree":
        files = subprocess.run(["git", "-C", repo, "ls-files", "-z", "--cached", "--others",
                                "--exclude-standard"], check=True, stdout=subprocess.PIPE).stdout
        for name in sorted(set(files.decode().split("\0"))):
            src = os.path.join(repo, name)
            if not name or not os.path.isfile(src):
                continue  # deleted in the working tree, or a submodule
            os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, name))
        return "working tree"
    rev = "HEAD" if source == "head" else source
    commit = subprocess.run(["git", "-C", repo, "rev-parse", "--short", rev], check=True,
                            stdout=subprocess.PIPE, text=True).stdout.strip()
    archive = subprocess.Popen(["git", "-C", repo, "archive", "--format=tar", commit],
                               stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", dest], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        sys.exit(f"git archive {commit} failed")
    return f"commit {commit}"


def failed_tests(ctest_output):
    """The tests CTest lists as failed (not those it lists as not run)."""
    _, _, failed = ctest_output.partition("The following tests FAILED:")
    return re.findall(r"^\s*\d+ - (\S+) \((?!Not Run|Skipped|Disabled)", failed, flags=re.M)


def write_file(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    now = time.time()
    os.utime(path, (now, now))  # newer than every object built from it


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mutants", default=os.path.join(HERE, "mutants.txt"), help="the mutant list")
    ap.add_argument("--source", default="head",
                    help="what to mutate: head (default), a revision, or worktree (uncommitted files too)")
    ap.add_argument("--overlay", action="append", default=[], metavar="PATH[=FROM]",
                    help="copy this file from the working tree (or from the file FROM) over the snapshot's "
                         "PATH (repeatable): new tests against the committed library")
    ap.add_argument("--only", action="append", default=[], help="mutant ids to run (comma-separated, repeatable)")
    ap.add_argument("--match", help="run the mutants whose id, file or description matches this regex")
    ap.add_argument("--first", type=int, help="run at most this many mutants (after --only / --match)")
    ap.add_argument("--list", action="store_true", help="list the mutants and whether each applies; build nothing")
    ap.add_argument("--jobs", type=int, default=2, help="parallel build and CTest jobs (default 2)")
    ap.add_argument("--timeout", type=int, default=600,
                    help="seconds for one mutant's CTest run, after which it counts as killed (default 600)")
    ap.add_argument("--test-timeout", type=int, default=120, help="CTest's limit per test, seconds (default 120)")
    ap.add_argument("--build-timeout", type=int, default=1200, help="seconds for one build (default 1200)")
    ap.add_argument("--ctest-args", default="", help="extra CTest arguments, e.g. \"-R 'test_.*'\"")
    ap.add_argument("--cmake-args", default="", help="extra configure arguments")
    ap.add_argument("--build-type", default="Release")
    ap.add_argument("--workdir", help="scratch directory to create (default: a new one in $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (snapshot, build, logs)")
    ap.add_argument("--report", help="also write the results here, tab-separated")
    args = ap.parse_args()

    repo = subprocess.run(["git", "-C", HERE, "rev-parse", "--show-toplevel"], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()
    mutants = parse_mutants(args.mutants)
    wanted = {i for group in args.only for i in group.split(",") if i}
    unknown = wanted - {m.id for m in mutants}
    if unknown:
        sys.exit(f"no such mutants: {', '.join(sorted(unknown))}")
    if wanted:
        mutants = [m for m in mutants if m.id in wanted]
    if args.match:
        rx = re.compile(args.match)
        mutants = [m for m in mutants if rx.search(m.id) or rx.search(m.file) or rx.search(m.description)]
    if args.first is not None:
        mutants = mutants[:args.first]
    if not mutants:
        sys.exit("no mutants selected")

    work = os.path.abspath(args.workdir) if args.workdir else tempfile.mkdtemp(prefix="edgeattn-mutation-")
    if args.workdir:
        if os.path.exists(work) and os.listdir(work):
            sys.exit(f"--workdir {work} exists and is not empty")
        os.makedirs(work, exist_ok=True)
    src, build, log = os.path.join(work, "src"), os.path.join(work, "build"), os.path.join(work, "log.txt")
    try:
        what = export_snapshot(repo, args.source, src)
        for overlay in args.overlay:
            name, _, origin = overlay.partition("=")
            origin = os.path.abspath(origin) if origin else os.path.join(repo, name)
            if not os.path.isfile(origin):
                sys.exit(f"--overlay {overlay}: no such file {origin}")
            os.makedirs(os.path.dirname(os.path.join(src, name)) or src, exist_ok=True)
            shutil.copyfile(origin, os.path.join(src, name))
        if args.overlay:
            what += " with " + ", ".join(args.overlay) + " over it"
        print(f"snapshot of {what} in {src}", flush=True)

        # Which mutants still apply to this snapshot.
        for m in mutants:
            path = os.path.join(src, m.file)
            if not os.path.isfile(path):
                m.status, m.detail = "stale", "file not found"
                continue
            with open(path, encoding="utf-8") as f:
                where = locate(f.read(), m)
            if isinstance(where, str):
                m.status, m.detail = "stale", where
        if args.list:
            for m in mutants:
                print(f"{m.id:34} {m.status or 'applies':8} {m.file}: {m.description} {m.detail}")
            return 0

        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        t0 = time.time()
        rc, out = run(["cmake", "-S", src, "-B", build, f"-DCMAKE_BUILD_TYPE={args.build_type}"] + generator +
                      shlex.split(args.cmake_args), log=log)
        if rc != 0:
            print(out[-3000:])
            sys.exit("configure failed")
        build_cmd = ["cmake", "--build", build, "-j", str(args.jobs)]
        rc, out = run(build_cmd, timeout=args.build_timeout, log=log)
        if rc != 0:
            print(out[-3000:])
            sys.exit("the unmutated snapshot does not build")
        print(f"configured and built in {time.time() - t0:.0f} s", flush=True)
        ctest_cmd = ["ctest", "--test-dir", build, "-j", str(args.jobs), "--timeout", str(args.test_timeout),
                     "--stop-on-failure"] + shlex.split(args.ctest_args)
        t0 = time.time()
        rc, out = run(ctest_cmd, timeout=args.timeout, log=log)
        if rc != 0:
            print(out[-3000:])
            sys.exit(f"the baseline fails ({', '.join(failed_tests(out)) or rc}): a mutation score needs a green "
                     "suite (leave failing tests out with --ctest-args \"-E ...\")")
        baseline = time.time() - t0
        print(f"baseline: every test passes in {baseline:.0f} s; {len(mutants)} mutants", flush=True)

        for n, m in enumerate(mutants, 1):
            if m.status == "stale":
                print(f"[{n}/{len(mutants)}] {m.id}: stale ({m.detail})", flush=True)
                continue
            path = os.path.join(src, m.file)
            with open(path, encoding="utf-8") as f:
                original_text = f.read()
            start, end = locate(original_text, m)
            t0 = time.time()
            try:
                write_file(path, original_text[:start] + m.replacement + original_text[end:])
                with open(log, "a", encoding="utf-8") as f:
                    f.write(f"\n===== mutant {m.id}: {m.file}\n- {m.original}\n+ {m.replacement}\n")
                rc, out = run(build_cmd, timeout=args.build_timeout, log=log)
                if rc != 0:
                    m.status = "invalid"
                    m.detail = "does not compile" if rc != "timeout" else "build timed out"
                else:
                    rc, out = run(ctest_cmd, timeout=args.timeout, log=log)
                    if rc == "timeout":
                        m.status, m.detail = "killed", f"CTest ran past {args.timeout} s"
                    elif rc != 0:
                        failed = failed_tests(out)
                        m.status = "killed"
                        m.detail = ", ".join(failed[:4]) + (" ..." if len(failed) > 4 else "") if failed \
                            else f"ctest exit {rc}"
                    else:
                        m.status = "survived"
            finally:
                write_file(path, original_text)
            m.seconds = time.time() - t0
            print(f"[{n}/{len(mutants)}] {m.id}: {m.status} in {m.seconds:.0f} s"
                  f"{' (' + m.detail + ')' if m.detail else ''}", flush=True)

        counts = {s: sum(m.status == s for m in mutants) for s in ("killed", "survived", "invalid", "stale")}
        valid = counts["killed"] + counts["survived"]
        print()
        print("mutant".ljust(34), "status".ljust(9), "what")
        for m in mutants:
            print(m.id.ljust(34), m.status.ljust(9), f"{m.file}: {m.description}"
                  f"{' [' + m.detail + ']' if m.detail else ''}")
        print()
        print(f"killed {counts['killed']}, survived {counts['survived']}, invalid {counts['invalid']}, "
              f"stale {counts['stale']}")
        if valid:
            print(f"score: {counts['killed']} / {valid} = {100.0 * counts['killed'] / valid:.1f}% of valid mutants")
        survivors = [m for m in mutants if m.status == "survived"]
        if survivors:
            print("survivors (no test fails with these bugs):")
            for m in survivors:
                print(f"  {m.id}: {m.file}: {m.description}")
                print(f"      - {m.original}\n      + {m.replacement}")
        if args.report:
            with open(args.report, "w", encoding="utf-8") as f:
                f.write("id\tstatus\tseconds\tfile\tdescription\tdetail\n")
                for m in mutants:
                    f.write(f"{m.id}\t{m.status}\t{m.seconds:.0f}\t{m.file}\t{m.description}\t{m.detail}\n")
        return 0
    finally:
        if args.keep:
            print(f"kept {work} (log: {log})")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
