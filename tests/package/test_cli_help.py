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
