"""Reading a finished study back: Optuna's ``get_all_trials`` against the package's bulk reader.

``optuna-boxcox search`` writes the study (by default the 20,160-trial combined2 search on sonar
with naive Bayes); each reader then reads it cold (a new storage, nothing cached), alternating,
and the two lists of trials are compared for equality.
"""

from __future__ import annotations

from pathlib import Path
import statistics
import subprocess
import sys
import time
from typing import Any

from optuna_boxcox.bench.end_to_end import data_file


def compare_readers(
    data: str, classifier: str, preset: str, *, sonar_csv: Path | None, workdir: Path, repeats: int
) -> dict[str, Any]:
    """Seconds of a cold read of the searched study by each reader (medians), and equality."""
    from optuna.storages import RDBStorage

    from optuna_boxcox._optuna._read import read_trials

    csv, label = data_file(data, sonar_csv, workdir)
    db = workdir / "read.db"
    db.unlink(missing_ok=True)
    url = f"sqlite:///{db}"
    command = [sys.executable, "-m", "optuna_boxcox.cli", "search", "--csv", str(csv)]
    command += ["--label", label, "--classifier", classifier, "--sampler", preset]
    command += ["--storage", url, "--study-name", "read", "--no-figures"]
    subprocess.run(command, check=True, capture_output=True, text=True, cwd=workdir)

    def cold(read: Any) -> tuple[float, list]:
        storage = RDBStorage(url, skip_compatibility_check=True)
        try:
            study_id = storage.get_study_id_from_name("read")
            started = time.perf_counter()
            trials = read(storage, study_id)
            return time.perf_counter() - started, trials
        finally:
            storage.engine.dispose()

    def ours(storage: RDBStorage, study_id: int) -> list:
        with storage.engine.connect() as connection:
            return read_trials(connection, study_id)

    def optunas(storage: RDBStorage, study_id: int) -> list:
        return storage.get_all_trials(study_id, deepcopy=False)

    theirs, mine, equal = [], [], True
    for _ in range(repeats):
        seconds, a = cold(optunas)
        theirs.append(seconds)
        seconds, b = cold(ours)
        mine.append(seconds)
        equal = equal and a == b
    return {
        "case": f"{data}:{classifier}:{preset}",
        "trials": len(b),
        "optuna_s": statistics.median(theirs),
        "bulk_s": statistics.median(mine),
        "ratio": statistics.median(theirs) / statistics.median(mine),
        "equal": equal,
        "repeats": repeats,
    }


def format_read_row(r: dict[str, Any]) -> str:
    return (
        f"read {r['case']} ({r['trials']} trials), cold, medians of {r['repeats']}: Optuna's "
        f"get_all_trials {r['optuna_s']:.2f} s, bulk reader {r['bulk_s']:.2f} s: "
        f"{r['ratio']:.1f}x; equal trials: {r['equal']}"
    )


__all__ = ["compare_readers", "format_read_row"]
