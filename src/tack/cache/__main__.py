"""``python -m tack.cache info | pack [--since FILE] | prune [--max-size SIZE] | clear [--all]``."""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import clear, describe, pack, prune


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tack.cache",
                                     description="Tack's kernel cache")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="settings, entries, size and bundle")
    packing = commands.add_parser("pack", help="write this version's entries into one "
                                               "bundle")
    packing.add_argument("--since", metavar="FILE",
                         help="only the entries used since FILE was last modified "
                              "(touch it before a warm-up run)")
    pruning = commands.add_parser("prune", help="delete least recently used entries")
    pruning.add_argument("--max-size", help="e.g. 500M, 2G (default: the size limit)")
    clearing = commands.add_parser("clear", help="delete this version's entries")
    clearing.add_argument("--all", action="store_true", help="every Tack version's")
    args = parser.parse_args(argv)
    try:
        _run(args)
    except ValueError as exc:   # a bad --max-size or TACK_CACHE* value, pack --since
        parser.error(str(exc))   # with no entry used since
    except OSError as exc:      # pack could not write the bundle, or read --since
        where = f"{exc.filename!s}: " if exc.filename is not None else ""
        print(f"{parser.prog}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


def _run(args) -> None:
    if args.command == "info":
        print(json.dumps(describe(), indent=2))
    elif args.command == "pack":
        since = None if args.since is None else os.stat(args.since).st_mtime
        path, count = pack(since=since)
        print(f"packed {count} entries into {path}")
    elif args.command == "prune":
        removed, left = prune(max_size=args.max_size)
        print(f"removed {removed} files; {left} bytes left")
    else:
        print(f"removed {clear(all_versions=args.all)} files")


if __name__ == "__main__":
    sys.exit(main())
