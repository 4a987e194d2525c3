"""``python -m ember.testing.conformance DEVICE ...``: the same as ``ember conformance DEVICE ...``."""
import argparse
import sys

from ._main import add_arguments, main

if __name__ == "__main__":
    p = argparse.ArgumentParser(prog="python -m ember.testing.conformance")
    add_arguments(p)
    sys.exit(main(p.parse_args()))
