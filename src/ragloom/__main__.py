"""``python -m ragloom``: the ``ragloom`` command without the console script."""

from ragloom.cli.main import main

if __name__ == "__main__":
    main()
