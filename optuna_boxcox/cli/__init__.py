"""The ``optuna-boxcox`` command line: each command a thin composition of the package's pieces.

One module per command (``search``, ``worker`` and ``demo`` share one); the arguments several
commands take are defined once in :mod:`._args`. Modules import the library only inside the
command they run, so ``--help`` and a mistyped command answer at once.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
import importlib
import sys
import warnings

from optuna_boxcox._system import _stop
from optuna_boxcox._version import __version__
from optuna_boxcox.cli._args import UsageError
from optuna_boxcox.cli._args import attach_signed_values
from optuna_boxcox.cli._args import flag_of

#: Modules that add sub-commands (each defines ``register(subparsers)``), in ``--help`` order.
COMMAND_MODULES = (
    "optuna_boxcox.cli.search",
    "optuna_boxcox.cli.dashboard",
    "optuna_boxcox.cli.compare",
    "optuna_boxcox.cli.benchmark",
    "optuna_boxcox.cli.reproduce",
    "optuna_boxcox.cli.meta",
    "optuna_boxcox.cli.bench",
)
#: Exit status after Ctrl-C, as a shell reports a process ended by SIGINT.
INTERRUPTED = 130
#: Exit status of a bug in optuna-boxcox (sysexits.h's EX_SOFTWARE), told apart from a mistake
#: the user can fix (2) and a failure of the machine, a dependency or a study storage (1).
INTERNAL_ERROR = 70
#: How a command starts a refused study over, unless its parser says otherwise (``start_over``).
START_OVER = "use another --storage, or delete the study, to start it over"
#: Signals the console script handles as Ctrl-C (what was scored is written, one line), with
#: the exit status a shell reports for a process they end: 128 + the signal's number.
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
#: The signals that stopped this command, in order (empty when none did, or Ctrl-C reached
#: :func:`main` without :func:`run`'s handlers).
received: list[int] = []


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="optuna-boxcox",
        description="Per-feature Box-Cox λ chosen for a classifier, searched with Optuna samplers.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks (before or after the command)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(sub)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``, with ``--debug`` after the command too: the command's parser
    leaves the top parser's one option over, as any option it does not know."""
    args, unknown = parser.parse_known_args(argv)
    args.debug = args.debug or "--debug" in unknown
    unknown = [arg for arg in unknown if arg != "--debug"]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = _parse(parser, attach_signed_values(sys.argv[1:] if argv is None else list(argv)))
    if args.command is None:
        parser.print_help()
        return 2
    undo = _print_package_log()
    if not args.debug:
        _quiet_driver_log()
    try:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with warnings.catch_warnings():
            if not args.debug:
                _SHOWN.clear()  # once a command, not once a process that runs several
                warnings.showwarning = _show_warning
                # scikit-learn's MLP says so when a Ctrl-C lands in its training, which it
                # swallows; the command stops all the same and says so in its own line.
                warnings.filterwarnings("ignore", message="Training interrupted by user")
            return args.func(args)
    except KeyboardInterrupt as interrupt:
        if args.debug:
            raise
        # What was scored is written (the runner's cleanup ran before this); say so in one line.
        n_trials = getattr(interrupt, "n_trials", None)  # the lifecycle's SearchInterrupted
        said = (
            f"interrupted after {n_trials} trials; run the same command to resume"
            if n_trials is not None
            else str(interrupt) or "interrupted; run the same command to resume"
        )
        print(f"optuna-boxcox: {_stopped_by(said)}", file=sys.stderr)
        return stopped_status()
    except Exception as error:
        if args.debug:
            raise
        return _report(error, args)
    finally:
        undo()


def _report(error: Exception, args: argparse.Namespace) -> int:
    """Say in one line why the command failed, and return its exit status."""
    if _interrupted(error):
        # Ctrl-C inside a database call: the driver's clean-up failed in its turn.
        said = _stopped_by("interrupted; run the same command to resume")
        print(f"optuna-boxcox: {said}", file=sys.stderr)
        return stopped_status()
    from optuna_boxcox._study._settings import StudyRefusal
    from optuna_boxcox._system._advice import Advised
    from optuna_boxcox.storage import redact
    from optuna_boxcox.storage import storage_failure

    # The library names the options it advises by parameter; a command, by flag.
    text = error.worded(flag_of) if isinstance(error, Advised) else str(error)
    if isinstance(error, StudyRefusal):
        # The library's refusal, ending with how this command starts the study over.
        said = error.message(getattr(args, "start_over", START_OVER))
        print(f"optuna-boxcox: error: {redact(said)}", file=sys.stderr)
        return 2
    # A value the caller can fix: the package's DataError and AdvisedValueError, scikit-learn's
    # InvalidParameterError and the library's refusals of an argument are all ValueErrors.
    if isinstance(error, (UsageError, ValueError)):
        print(f"optuna-boxcox: error: {redact(text)}", file=sys.stderr)
        return 2
    # A failed read or write is described by the database's own error, not by Optuna's guess
    # ("invalid data ... exceeding max length").
    reason = storage_failure(error, getattr(args, "storage", None))
    if reason is not None:
        print(f"optuna-boxcox: error: {reason}", file=sys.stderr)
        return 1
    # An advised error is named by the library's class it refines (StorageError).
    kind = next(k for k in type(error).__mro__ if not issubclass(k, Advised)).__name__
    line = text.splitlines()[0] if text else ""
    if _is_bug(error):
        # Not the user's to fix: the type and message point a report at the bug.
        said = f"{kind}: {redact(line)}" if line else kind
        print(
            f"optuna-boxcox: internal error: {said} (a bug in optuna-boxcox {__version__}, "
            "worth reporting: run the same command with --debug to see the traceback)",
            file=sys.stderr,
        )
        return INTERNAL_ERROR
    print(
        f"optuna-boxcox: error: {kind}: {redact(line or kind)} (run with --debug for details)",
        file=sys.stderr,
    )
    return 1


def _is_bug(error: Exception) -> bool:
    """Whether ``error`` is none of the failures a command expects of the machine, a dependency
    or a study storage (the user's mistakes are told apart before)."""
    from optuna.exceptions import OptunaError
    from sqlalchemy.exc import SQLAlchemyError

    if isinstance(error, ImportError):
        # A dependency missing or broken (MissingPeerError: a peer's); not a module of ours.
        return (error.name or "").partition(".")[0] == "optuna_boxcox"
    if isinstance(error, RuntimeError):
        # StorageError, a worker process that died (killed, out of memory?) and a server a bench
        # could not start are RuntimeErrors; these two subclasses of Python's are bugs.
        return isinstance(error, (NotImplementedError, RecursionError))
    return not isinstance(error, (OSError, MemoryError, OptunaError, SQLAlchemyError))


def stopped_status() -> int:
    """The exit status of a command stopped by a signal: 128 + its number, as a shell reports
    a process that signal ends (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP)."""
    import signal

    return 128 + (received[0] if received else signal.SIGINT)


def _stopped_by(said: str) -> str:
    """``interrupted after …`` as ``stopped by SIGTERM after …`` when a signal other than Ctrl-C
    stopped the command."""
    import signal

    if not received or received[0] == signal.SIGINT:
        return said
    return said.replace("interrupted", f"stopped by {signal.Signals(received[0]).name}", 1)


def _interrupted(error: BaseException) -> bool:
    """Whether ``error`` was raised while a KeyboardInterrupt was being handled."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _quiet_driver_log() -> None:
    """SQLAlchemy logs a failed connection reset (after a Ctrl-C inside a query) with a traceback
    through Python's last-resort handler; the command says what happened in its own one line."""
    import logging

    sqlalchemy = logging.getLogger("sqlalchemy")
    if not sqlalchemy.handlers:
        sqlalchemy.addHandler(logging.NullHandler())


def _print_package_log() -> Callable[[], None]:
    """Print what the package logs at INFO and above (such as "created new study database …") as
    one line each, as the errors are; returns what undoes it (tests run many commands in one
    process)."""
    import logging

    logger = logging.getLogger("optuna_boxcox")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("optuna-boxcox: %(message)s"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    def undo() -> None:
        logger.removeHandler(handler)
        logger.setLevel(level)

    return undo


def run() -> None:
    """The ``optuna-boxcox`` console script: :func:`main`, then a quick exit.

    Once a command has finished, its output is flushed and its databases closed, the process
    exits without Python's finalisation, which takes over half a second with scikit-learn, SciPy,
    pandas and Numba loaded — a tenth of a typical search command. Tests call :func:`main`.
    """
    _second_interrupt_quits()
    try:
        status = main()
    except BrokenPipeError:  # the reader went away (… | head): nothing left to say
        status = 0
    except KeyboardInterrupt:  # before main's own handling: while the commands were imported
        print(f"optuna-boxcox: {_stopped_by('interrupted')}", file=sys.stderr)
        status = stopped_status()
    _close_and_exit(status)


def _second_interrupt_quits() -> None:
    """The first Ctrl-C raises KeyboardInterrupt, as always: the command stops after writing what
    was scored. The second quits at once, in one line, with status 130: raised as a second
    KeyboardInterrupt it would land wherever that cleanup is, and inside a finaliser Python prints
    it as a traceback and carries on. Quitting loses no written trial (as kill -9 does not).

    A first Ctrl-C that lands in a finaliser (a weakref callback, a ``__del__``) is lost the same
    way; it is raised again a moment later, outside the finaliser, so that one Ctrl-C always
    stops the command.

    SIGTERM (sent by ``timeout``, a batch scheduler, ``docker stop``) and SIGHUP (a closed
    terminal) are handled the same way, ending with 128 + their number (143, 129); a signal
    ignored when the command starts (a background job's Ctrl-C, ``nohup``'s SIGHUP) stays
    ignored."""
    import os
    import signal
    import threading

    handled = [
        getattr(signal, name)
        for name in STOP_SIGNALS
        if hasattr(signal, name)
        and signal.getsignal(getattr(signal, name))
        in (signal.default_int_handler if name == "SIGINT" else signal.SIG_DFL,)
    ]
    if not handled:
        return  # ignored or handled by whoever runs us: leave them so

    def first(signum, _frame) -> None:
        received.append(signum)
        _stop.request(signum)  # a classifier may swallow the KeyboardInterrupt (the MLP does)
        for handled_signal in handled:
            signal.signal(handled_signal, second)
        if _stop.deferring():
            return  # Optuna is asking for or telling a trial: raised once that is written
        raise KeyboardInterrupt

    def second(signum, _frame) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os.write(
            sys.stderr.fileno(),
            b"optuna-boxcox: interrupted again: stopped at once; what was written is kept, "
            b"run the same command to resume\n",
        )
        os._exit(stopped_status())

    report_unraisable = sys.unraisablehook

    def unraisable(failure) -> None:
        if isinstance(failure.exc_value, KeyboardInterrupt):
            signum = received.pop() if received else signal.SIGINT
            for handled_signal in handled:
                signal.signal(handled_signal, first)
            # Raised now, it would be handled at once, in the finaliser again.
            threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
            return
        report_unraisable(failure)

    for handled_signal in handled:
        signal.signal(handled_signal, first)
    sys.unraisablehook = unraisable


def _close_and_exit(status: int) -> None:
    import logging
    import os
    import signal

    # Closing takes milliseconds; a Ctrl-C now would only turn the exit into a traceback.
    for name in STOP_SIGNALS:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    try:
        from optuna_boxcox.storage import close_opened_storages

        close_opened_storages()  # SQLite copies its write-ahead log into the file on close
    finally:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    # One line, as the errors: the file and source line of a warning raised inside the package
    # say nothing to someone running a command.
    from optuna_boxcox.storage import redact

    text = redact(" ".join(str(message).split()))
    said = f"optuna-boxcox: {category.__name__}: {text}"
    # Once a command: the same warning from every fold of a benchmark (an MLP that does not
    # converge, an extreme column) is said by its first line.
    if said not in _SHOWN:
        _SHOWN.add(said)
        print(said, file=file or sys.stderr)


#: The warnings a command has shown, as printed.
_SHOWN: set[str] = set()


__all__ = [
    "INTERNAL_ERROR",
    "INTERRUPTED",
    "STOP_SIGNALS",
    "UsageError",
    "build_parser",
    "main",
    "run",
]
