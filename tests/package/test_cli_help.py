"""Every option of every command says what it is for: a check that walks argparse's parser, whose
actions are private state of argparse."""

from __future__ import annotations

import argparse

from optuna_boxcox.cli import build_parser


def test_every_option_of_every_command_has_a_description():
    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                described = {a.dest: a.help for a in action._choices_actions}
                for name, sub in action.choices.items():
                    if not (described.get(name) or "").strip():
                        missing.append(f"{path} {name}")
                    walk(sub, f"{path} {name}")
            elif action.help != argparse.SUPPRESS and not (action.help or "").strip():
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "optuna-boxcox")
    assert not missing, "--help shows no description for: " + ", ".join(missing)


def _help_of(command: str, option: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if option in a.option_strings)
    return " ".join(action.help.split())


def test_search_sampler_help_names_every_sampler_of_the_registry():
    from optuna_boxcox._lifecycle._guard import sampler_names

    shown = _help_of("search", "--sampler")
    missing = [name for name in sampler_names() if name not in shown]
    assert not missing, f"search --sampler's help leaves out {missing}"


def test_fidelity_help_says_auto_is_priced_not_measured():
    from optuna_boxcox._objective._auto import EXACT_SECONDS
    from optuna_boxcox._study._fidelity import DEFAULT_BUDGET_SECONDS

    shown = _help_of("search", "--fidelity")
    assert "measured" not in shown  # nothing is timed: the cost class prices it
    assert "cost class" in shown
    assert f"under {EXACT_SECONDS:g} s" in shown
    assert f"fit {DEFAULT_BUDGET_SECONDS / 60:g} minutes" in shown
