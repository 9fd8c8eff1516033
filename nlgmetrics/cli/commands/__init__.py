"""``evaluate.py``'s subcommands, one module each: ``add_parser(subparsers)`` and ``run(args) -> dict``.

The order here is the order of ``evaluate.py --help``.
"""

from nlgmetrics.cli.commands import (
    adversarial,
    compare,
    correlate,
    devmix,
    make_adversarial,
    nli_accuracy,
    robustness,
    score,
    selfbias,
    stress,
    stress_report,
)

COMMANDS = (
    score,
    compare,
    correlate,
    adversarial,
    stress,
    stress_report,
    make_adversarial,
    robustness,
    selfbias,
    devmix,
    nli_accuracy,
)
