"""Subcommands of the ``lasthop`` CLI, one module each; every module exposes ``command``."""
