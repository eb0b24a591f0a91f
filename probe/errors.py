"""Errors that are the user's to fix: the CLI prints them without a traceback."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user (exit code 2)."""


class Failure(Exception):
    """The command could not do its job for a reason that is not the user's input (exit code 1)."""
