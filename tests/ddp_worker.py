"""One rank of the metric-contract DDP test, run as its own Python process
(``python tests/ddp_worker.py ARGS.json RANK``).

A fresh interpreter per rank, not ``fork``: a forked pytest process inherits torch's thread pools and any
process group state earlier tests left behind, which made the sync fail only inside the full suite.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import socket
import sys
from pathlib import Path
from typing import Iterator


def free_port() -> int:
    """A local TCP port nothing listens on now, for a test's process group store."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def gloo_group(rank: int, world: int, port: int) -> Iterator[None]:
    """A gloo group that no rank leaves while another still talks to it.

    Without the closing barrier the rank that hosts the TCP store can tear it down while the other rank is still
    in its last collective. That is our reading of a rank-0 SIGABRT ("terminate called without an active
    exception") in one CI run; it was not reproduced here, so faulthandler stays on to show more if it recurs.
    """
    import faulthandler

    import torch.distributed as dist

    faulthandler.enable()  # should a rank still abort, CI shows where each of its Python threads was
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=60),
    )
    try:
        yield
        dist.barrier()
    finally:
        dist.destroy_process_group()


def build(name: str, args: dict, per_sample: bool = False):
    """The metric under test, built from picklable specs only (what each DDP rank does in a user's loop)."""
    from mars.metric import MARS
    from menli.metric import MENLI
    from sescore.metric import SEScore

    if name == "sescore":
        return SEScore(checkpoint=args["checkpoint"], per_sample=per_sample)
    if name == "menli":
        return MENLI(model=args["nli"], per_sample=per_sample)
    if name == "menli-mix":
        import functools

        from menli.metric import MENLIMix
        from nlgmetrics.baselines import SacreBleuScorer

        partners = [functools.partial(SacreBleuScorer, "chrf"), functools.partial(SacreBleuScorer, "bleu")]
        return MENLIMix(partners, recipe=args["mix_recipe"], model=args["nli"], per_sample=per_sample)
    return MARS(args["mars"], per_sample=per_sample)


def main(args_file: str, rank: int) -> None:
    args = json.loads(Path(args_file).read_text())
    with gloo_group(rank, args["world"], args["port"]):
        metric = build(args["name"], args, per_sample=True)
        if rank == 0:  # rank 1 never updates: its empty state must still sync
            metric.update(args["hyps"], args["refs"])
        values = metric.compute()
        mean = build(args["name"], args)
        if rank == 0:
            mean.update(args["hyps"], args["refs"])
        Path(args["out_dir"], f"rank{rank}.json").write_text(
            json.dumps({"per_sample": values.tolist(), "dtype": str(values.dtype), "mean": float(mean.compute())})
        )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main(sys.argv[1], int(sys.argv[2]))
