"""Several worker processes on one study: they share the sweeps and agree on the result.

    python examples/workers.py --workers 3                         # SQLite file under studies/
    python examples/workers.py --workers 3 --storage postgresql+psycopg://user:pw@host/db

The first worker creates the study with `optuna-boxcox search`; the others join it with
`optuna-boxcox worker`, which reads data set, classifier and sampler from the study itself, so on
other machines only the storage URL and study name are needed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import subprocess
import sys
import time

import optuna

from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import open_storage

STUDIES = Path(__file__).resolve().parents[1] / "studies"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--storage", default=f"sqlite:///{STUDIES / 'workers-example.db'}")
    parser.add_argument(
        "--study-name", default=None, help="default: workers/breast_cancer/bayes/<sampler>"
    )
    parser.add_argument("--features", type=int, default=30)
    parser.add_argument("--sampler", default="combined1")
    args = parser.parse_args()
    args.study_name = args.study_name or f"workers/breast_cancer/bayes/{args.sampler}"
    cli = [sys.executable, "-m", "optuna_boxcox.cli"]
    first = subprocess.Popen(
        [
            *cli,
            "search",
            "--dataset",
            "breast_cancer",
            "--features",
            str(args.features),
            "--classifier",
            "bayes",
            "--sampler",
            args.sampler,
            "--storage",
            args.storage,
            "--study-name",
            args.study_name,
            "--no-batch",
        ]
    )
    # The others join once the study exists.
    storage = open_storage(args.storage)
    while True:
        try:
            study = optuna.load_study(study_name=args.study_name, storage=storage)
            if "boxcox_spec" in study.user_attrs:  # the search spec the workers read
                break
        except KeyError:
            pass
        time.sleep(0.2)
    others = [
        subprocess.Popen(
            [*cli, "worker", "--storage", args.storage, "--study-name", args.study_name]
        )
        for _ in range(args.workers - 1)
    ]
    codes = [p.wait() for p in [first, *others]]
    result = make_sampler(args.sampler).result(
        optuna.load_study(study_name=args.study_name, storage=storage)
    )
    print(f"{len(codes)} workers (exit codes {codes}); best accuracy {result.best_value:.4f}")


if __name__ == "__main__":
    main()
