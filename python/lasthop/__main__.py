"""``python -m lasthop`` is the ``lasthop`` command."""

from lasthop.cli import main

if __name__ == "__main__":
    main()
