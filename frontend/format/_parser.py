"""Parser of the textual format DSL.

Grammar (MLIR spellings accepted: ``floordiv``, ``mod``, ``nonordered``)::

    format  := '(' [name (',' name)*] ')' '->' '(' [level (',' level)*] ')'
    level   := expr ':' type
    expr    := term (('+' | '-') term)*          term := atom (('//' | '%' | '*') atom)*
    atom    := name | integer | '(' expr ')'
    type    := name ['(' arg (',' arg)* ')'] | 'structured' '[' int ',' int ']'

Every error is a ``ValueError`` that gives the column; the parser is iterative in its loops and
bounds nesting, so no input hangs it or overflows the stack.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ._expressions import BinaryExpr, Constant, Dimension, Expr
from ._levels import Level, LevelFormat, LevelProperty, make_level

_TOKEN = re.compile(r"\s*(?:(?P<num>\d+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>->|//|[()\[\],:+\-%*]))")
_ENCODING = re.compile(r"^\s*#sparse_tensor\.encoding\s*<\s*\{(?P<body>.*)\}\s*>\s*$", re.S)
_MAX_DEPTH = 32
_MAX_INT = 2**31 - 1
_PROPERTIES = {
    "unique": LevelProperty.UNIQUE, "nonunique": LevelProperty.NONUNIQUE,
    "ordered": LevelProperty.ORDERED, "unordered": LevelProperty.UNORDERED,
    "nonordered": LevelProperty.UNORDERED, "soa": LevelProperty.SOA,
}
_WORD_OPS = {"floordiv": "//", "mod": "%"}


@dataclass
class _Token:
    kind: str  # "num", "name", "op", "end"
    text: str
    col: int   # 1-based column


class FormatSyntaxError(ValueError):
    """A malformed format string; the message names the column."""


def _tokenize(text: str) -> list[_Token]:
    tokens, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m:
            col = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
            raise FormatSyntaxError(f"unexpected character {text[col - 1]!r} at column {col}")
        kind = m.lastgroup or "op"
        tokens.append(_Token(kind, m.group(kind), m.start(kind) + 1))
        pos = m.end()
    tokens.append(_Token("end", "", len(text) + 1))
    return tokens


def strip_encoding(text: str) -> str:
    """``#sparse_tensor.encoding<{ map = (...) -> (...), posWidth = 32 }>`` -> the map text."""
    m = _ENCODING.match(text)
    if not m:
        return text
    body = m.group("body")
    mm = re.search(r"\bmap\s*=\s*", body)
    if not mm:
        raise FormatSyntaxError("#sparse_tensor.encoding without a 'map = ...' entry")
    rest, depth = body[mm.end():], 0
    for k, ch in enumerate(rest):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            return rest[:k]
    return rest


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.k = 0
        self.depth = 0

    @property
    def tok(self) -> _Token:
        return self.tokens[self.k]

    def fail(self, what: str, tok: _Token | None = None) -> FormatSyntaxError:
        t = tok or self.tok
        found = "end of input" if t.kind == "end" else repr(t.text)
        return FormatSyntaxError(f"{what} at column {t.col}, found {found}")

    def expect(self, text: str) -> _Token:
        if self.tok.text != text or self.tok.kind not in ("op", "name"):
            raise self.fail(f"expected '{text}'")
        t = self.tok
        self.k += 1
        return t

    def accept(self, text: str) -> bool:
        if self.tok.kind in ("op", "name") and self.tok.text == text:
            self.k += 1
            return True
        return False

    def name(self, what: str) -> str:
        if self.tok.kind != "name":
            raise self.fail(f"expected {what}")
        t = self.tok
        self.k += 1
        return t.text

    def integer(self, what: str) -> int:
        if self.tok.kind != "num":
            raise self.fail(f"expected {what}")
        t = self.tok
        self.k += 1
        if len(t.text) > 10 or int(t.text) > _MAX_INT:
            raise FormatSyntaxError(f"integer {t.text} at column {t.col} is too large")
        return int(t.text)

    # format := '(' dims ')' '->' '(' levels ')'
    def format(self) -> tuple[list[Dimension], list[Level]]:
        self.expect("(")
        names: list[str] = []
        if not self.accept(")"):
            while True:
                names.append(self.name("a dimension name"))
                if self.accept(")"):
                    break
                self.expect(",")
        seen = set()
        for n in names:
            if n in seen:
                raise FormatSyntaxError(f"repeated dimension {n!r} in the dimension list")
            seen.add(n)
        dims = {n: Dimension(n) for n in names}
        self.expect("->")
        self.expect("(")
        levels: list[Level] = []
        if not self.accept(")"):
            while True:
                levels.append(self.level(dims))
                if self.accept(")"):
                    break
                self.expect(",")
        if self.tok.kind != "end":
            raise self.fail("unexpected text after the format")
        return list(dims.values()), levels

    def level(self, dims: dict[str, Dimension]) -> Level:
        start = self.tok
        expr = self.expr(dims)
        self.expect(":")
        try:
            return self.level_type(expr)
        except FormatSyntaxError:
            raise
        except (ValueError, TypeError) as exc:
            raise FormatSyntaxError(f"{exc} (level at column {start.col})") from None

    def expr(self, dims: dict[str, Dimension]) -> Expr:
        left = self.term(dims)
        while self.tok.kind == "op" and self.tok.text in ("+", "-"):
            op = self.tok.text
            self.k += 1
            left = BinaryExpr(op, left, self.term(dims))
        return left

    def term(self, dims: dict[str, Dimension]) -> Expr:
        left = self.atom(dims)
        while (self.tok.kind == "op" and self.tok.text in ("//", "%", "*")) or (
                self.tok.kind == "name" and self.tok.text in _WORD_OPS):
            op = _WORD_OPS.get(self.tok.text, self.tok.text)
            self.k += 1
            left = BinaryExpr(op, left, self.atom(dims))
        return left

    def atom(self, dims: dict[str, Dimension]) -> Expr:
        t = self.tok
        if t.kind == "num":
            return Constant(self.integer("an integer"))
        if t.kind == "name":
            self.k += 1
            if t.text not in dims:
                raise FormatSyntaxError(f"unknown dimension {t.text!r} at column {t.col}")
            return dims[t.text]
        if t.kind == "op" and t.text == "(":
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise FormatSyntaxError(f"expression nested too deeply at column {t.col}")
            self.k += 1
            e = self.expr(dims)
            self.expect(")")
            self.depth -= 1
            return e
        raise self.fail("expected a dimension, an integer or '('")

    def level_type(self, expr: Expr) -> Level:
        t = self.tok
        word = self.name("a level type")
        try:
            fmt = LevelFormat(word)
        except ValueError:
            known = ", ".join(f.value for f in LevelFormat)
            raise FormatSyntaxError(f"unknown level type {word!r} at column {t.col} (known: {known})") from None
        if fmt is LevelFormat.STRUCTURED:
            self.expect("[")
            n = self.integer("n of structured[n, m]")
            self.expect(",")
            m = self.integer("m of structured[n, m]")
            self.expect("]")
            return make_level(expr, (fmt, (n, m)))
        if fmt is LevelFormat.DELTA:
            self.expect("(")
            bits = self.integer("the bit width of delta(bits)")
            self.expect(")")
            return make_level(expr, (fmt, bits))
        if fmt is LevelFormat.RANGE and self.accept("("):
            stored = self.integer("the stored length of range(n)")
            self.expect(")")
            return make_level(expr, (fmt, stored))
        props: list[LevelProperty] = []
        if self.accept("("):
            while True:
                pt = self.tok
                p = self.name("a level property")
                if p not in _PROPERTIES:
                    raise FormatSyntaxError(f"unknown level property {p!r} at column {pt.col} "
                                            f"(known: {', '.join(sorted(_PROPERTIES))})")
                props.append(_PROPERTIES[p])
                if self.accept(")"):
                    break
                self.expect(",")
        return make_level(expr, (fmt, tuple(props)) if props else fmt)


def parse_format(text: str) -> tuple[list[Dimension], list[Level]]:
    """Parses DSL text into dimensions and levels (validated later by ``TensorFormat``)."""
    if not isinstance(text, str):
        raise TypeError(f"a format string is expected, got {type(text).__name__}")
    return _Parser(strip_encoding(text)).format()
