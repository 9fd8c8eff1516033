"""File one command-line run as a result: ``bench/results/<name>.json`` and ``.md``.

Why: a dev-mix comparison or a stress run is a command of the toolkit whose last stdout line is its JSON result.
What turns that into a result someone can trust later is what the command line alone does not keep: the exact
command, the commit it ran at, what it cost (wall and CPU seconds, peak memory of that process) and the machine.
This runner adds those, so a decision recorded in the experiments guide points at a file that says how to redo it.

    python -m bench.record NAME --about "what and why" -- nlgmetrics-evaluate devmix --half select ...

A ``--markdown FILE`` in the command is kept: its table opens ``NAME.md``; the cost, command and machine follow.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from bench.harness import REPO, RESULTS, machine, portable


def commit() -> str:
    """The checkout's commit, with ``+changes`` when tracked files differ from it (a result of uncommitted code)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "-uno"], cwd=REPO, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def last_json_line(text: str) -> dict:
    """The command's result: its last stdout line that is a JSON object.

    Raises:
        ValueError: no line is one.
    """
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    raise ValueError("the command printed no JSON object on stdout")


def run_recorded(command: Sequence[str]) -> tuple[dict, dict]:
    """Run ``command`` (stderr passes through) and return its JSON result and its cost.

    Returns:
        (result, cost): cost has ``wall_seconds``, ``cpu_seconds`` and ``peak_rss_mb`` of that process and its
        children.
    """
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as out:
        started = time.perf_counter()
        process = subprocess.Popen(list(command), stdout=out, cwd=REPO)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if code != 0:
        raise SystemExit(f"the command ended with exit code {code}; nothing was written")
    cost = {
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
    }
    return last_json_line(text), cost


def markdown_option(command: Sequence[str]) -> Path | None:
    """The file the command's ``--markdown`` writes, if it has one."""
    for i, arg in enumerate(command):
        if arg == "--markdown" and i + 1 < len(command):
            return Path(command[i + 1])
        if arg.startswith("--markdown="):
            return Path(arg.split("=", 1)[1])
    return None


def record(name: str, about: str, command: Sequence[str], folder: Path = RESULTS) -> dict:
    """Run ``command`` and write ``<folder>/<name>.json`` and ``.md``.

    Args:
        name: the result's file stem.
        about: one or two sentences: what the run decides or shows, and where its rule is written.
        command: the command line (an ``nlgmetrics-evaluate`` subcommand or anything printing a JSON object last).
        folder: where the files go.

    Returns:
        The JSON document as written.
    """
    folder = Path(folder)
    if not about.strip():
        raise SystemExit("--about is empty: say what the run is for")
    table = markdown_option(command)
    result, cost = run_recorded(command)
    document = portable(
        {
            **result,
            "command": shlex.join(command),
            "commit": commit(),
            "cost": cost,
            "machine": machine(),
            "about": about,
        }
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    lines = [(REPO / table).read_text(encoding="utf-8").rstrip(), ""] if table else [f"# {name}", ""]
    lines += [
        f"- {about}",
        f"- Cost: {cost['wall_seconds']:.0f} s wall, {cost['cpu_seconds']:.0f} CPU-s, peak {cost['peak_rss_mb']} MB.",
        f"- Command (commit {document['commit'][:12]}): `{document['command']}`",
        "",
        f"Machine: {document['machine']}",
    ]
    (folder / f"{name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(json.dumps(document))
    return document


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        raise SystemExit("usage: python -m bench.record NAME --about TEXT -- COMMAND ...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="result file stem under bench/results")
    parser.add_argument("--about", required=True, help="what the run decides or shows")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        raise SystemExit("no command after --")
    record(args.name, args.about, command)


if __name__ == "__main__":
    main()
