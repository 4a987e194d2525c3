"""The reference vendor plugin stays readable in one sitting: at most 400 lines of code.

A line of code is a non-blank line that is neither a comment nor part of a docstring (of the
module, a class or a function), counted with ``ast`` and ``tokenize`` over
examples/vendor_plugin/ember_vdev/*.py.
"""
from __future__ import annotations

import ast
import io
import pathlib
import tokenize

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin" / "ember_vdev"
LIMIT = 400


def lines_of_code(source: str) -> int:
    """Non-blank lines of ``source`` that hold a token other than a comment, outside docstrings."""
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER, tokenize.ENCODING}
    code = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip:
            code.update(range(tok.start[0], tok.end[0] + 1))     # a multi-line string counts each line
    return len(code - docstrings)


def test_lines_of_code_counter():
    src = '"""doc\n\nmore"""\nimport os  # c\n\n# only a comment\ndef f(x):\n    """doc"""\n    return (x +\n            1)\n'
    assert lines_of_code(src) == 4


def test_reference_plugin_is_small():
    counts = {p.name: lines_of_code(p.read_text()) for p in sorted(PACKAGE.glob("*.py"))}
    assert counts, f"no Python files under {PACKAGE}"
    total = sum(counts.values())
    assert total <= LIMIT, (f"examples/vendor_plugin/ember_vdev has {total} lines of code (limit {LIMIT}): "
                            + ", ".join(f"{n} {c}" for n, c in sorted(counts.items(), key=lambda kv: -kv[1])))
