"""Java regular expressions run by Python's ``re``, exactly or not at all (pure).

Kafka's principal mapping rules are ``java.util.regex`` patterns and ``Matcher.replaceAll`` replacement strings.
:func:`compile_java` translates the part of Java's syntax whose meaning Python's ``re`` can reproduce exactly
(literals, ``.``, simple character classes and ranges, ``\\d \\w \\s`` and their negations as Java's ASCII
classes, groups, named groups, lookahead, alternation, greedy and lazy quantifiers, ``^`` and ``$`` with Java's
line-terminator rules) and raises :class:`UnsupportedRegex` for everything else (lookbehind, possessive and
atomic forms, back references, ``\\b``, ``\\p{..}``, inline flags, nested or intersected classes, characters
outside the BMP, where UTF-16 and code points differ). Syntax errors Java reports too raise
:class:`InvalidRegex`. :func:`replace` is ``Matcher.replaceAll``/``replaceFirst`` (the ``find`` loop, empty
matches, ``$n`` taking the longest legal group number, ``${name}``, ``\\x``, and the same errors).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kquotactl.core.errors import QuotaError

#: Java's ``.`` without DOTALL: anything but its line terminators.
DOT = "[^\\n\\r\\x85\\u2028\\u2029]"
#: Java's ``\s`` without UNICODE_CHARACTER_CLASS.
SPACE = "[ \\t\\n\\x0b\\f\\r]"
#: Java's ``$`` without MULTILINE: the end, or before a final line terminator (``\r\n`` as one, never between).
DOLLAR = "(?:(?=\\r\\n\\Z)|(?<!\\r)(?=\\n\\Z)|(?=[\\r\\x85\\u2028\\u2029]\\Z)|\\Z)"

_CLASS_ESCAPES = {"d": "0-9", "w": "a-zA-Z_0-9", "s": " \\t\\n\\x0b\\f\\r"}
_SHORTHANDS = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": "[a-zA-Z_0-9]",
    "W": "[^a-zA-Z_0-9]",
    "s": SPACE,
    "S": "[^ \\t\\n\\x0b\\f\\r]",
}
_CONTROL = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "a": "\a", "e": "\x1b"}


class RegexError(QuotaError):
    """A Java pattern or replacement kquotactl cannot run the way Java would."""


class InvalidRegex(RegexError):
    """Java refuses it too (``PatternSyntaxException``, ``IllegalArgumentException``, ``IndexOutOfBounds``)."""


class UnsupportedRegex(RegexError):
    """Valid or not in Java, kquotactl cannot reproduce its meaning exactly with Python's ``re``: refused."""


@dataclass(frozen=True)
class JavaPattern:
    source: str
    compiled: re.Pattern[str]
    groups: int
    names: dict[str, int]

    def matches(self, text: str) -> re.Match[str] | None:
        """``Matcher.matches()``: the whole text."""
        return self.compiled.fullmatch(text)


def _bmp_only(text: str, what: str) -> None:
    if any(ord(c) > 0xFFFF for c in text):
        raise UnsupportedRegex(f"{what} {text!r} has a character outside the BMP (Java counts it as two)")


def _hex_escape(pattern: str, i: int, n: int) -> tuple[str, int]:
    digits = pattern[i : i + n]
    if len(digits) != n or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise UnsupportedRegex(
            f"regex {pattern!r}: the escape at character {i - 1} needs hexadecimal digits (0-9, a-f)"
        )
    return chr(int(digits, 16)), i + n


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """The escape starting after the backslash at ``i - 1``: (Python text, next index)."""
    if i >= len(pattern):
        raise InvalidRegex(f"regex {pattern!r}: the backslash at the end escapes nothing (write \\\\ for a backslash)")
    c = pattern[i]
    if c in _SHORTHANDS:
        if in_class:
            if c in _CLASS_ESCAPES:
                return _CLASS_ESCAPES[c], i + 1
            raise UnsupportedRegex(f"regex {pattern!r}: \\{c} inside a character class is not supported")
        return _SHORTHANDS[c], i + 1
    if c in _CONTROL:
        return re.escape(_CONTROL[c]), i + 1
    if c == "x":
        ch, j = _hex_escape(pattern, i + 1, 2)
        return re.escape(ch), j
    if c == "u":
        ch, j = _hex_escape(pattern, i + 1, 4)
        if 0xD800 <= ord(ch) <= 0xDFFF:
            raise UnsupportedRegex(f"regex {pattern!r}: a surrogate escape is not supported")
        return re.escape(ch), j
    if c.isascii() and c.isalnum():
        raise UnsupportedRegex(f"regex {pattern!r}: the escape \\{c} is not supported")
    return re.escape(c), i + 1


def _char_class(pattern: str, i: int) -> tuple[str, int]:
    """The class starting after ``[`` at ``i - 1``."""
    out = ["["]
    if i < len(pattern) and pattern[i] == "^":
        out.append("^")
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        raise UnsupportedRegex(f"regex {pattern!r}: ']' first in a character class is not supported")
    prev_single: str | None = None  # the last single character, which a '-' may turn into a range
    items = 0
    while True:
        if i >= len(pattern):
            raise InvalidRegex(
                f"regex {pattern!r}: a '[' is never closed (add ']', or write \\[ for the character itself)"
            )
        c = pattern[i]
        if c == "]":
            if items == 0:
                raise UnsupportedRegex(f"regex {pattern!r}: an empty character class is not supported")
            out.append("]")
            return "".join(out), i + 1
        if c == "[" or pattern.startswith("&&", i):
            raise UnsupportedRegex(f"regex {pattern!r}: nested or intersected character classes are not supported")
        if c == "\\":
            text, j = _escape(pattern, i + 1, True)
            single = None if pattern[i + 1] in _CLASS_ESCAPES else _unescape(text)
        else:
            text, j, single = re.escape(c), i + 1, c
        if c == "-" and prev_single is not None and j < len(pattern) and pattern[j] != "]":
            # a range prev-next
            if pattern[j] in "[\\&-":
                raise UnsupportedRegex(f"regex {pattern!r}: this character range is not supported")
            hi = pattern[j]
            if ord(hi) < ord(prev_single):
                raise InvalidRegex(
                    f"regex {pattern!r}: the character range {prev_single}-{hi} runs backwards "
                    "(write the lower end first)"
                )
            out.append("-" + re.escape(hi))
            i, prev_single, items = j + 1, None, items + 1
            continue
        out.append(text)
        i, prev_single, items = j, single, items + 1


def _unescape(text: str) -> str:
    return text[1:] if text.startswith("\\") and len(text) == 2 else text


_QUANT = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")


def compile_java(pattern: str) -> JavaPattern:
    """``Pattern.compile(pattern)`` as a Python pattern with the same meaning, or :class:`RegexError`."""
    _bmp_only(pattern, "regex")
    out: list[str] = []
    depth = 0
    groups = 0
    names: dict[str, int] = {}
    can_repeat = False  # the last item is an atom a quantifier may follow
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "{" and not can_repeat:
            raise UnsupportedRegex(
                f"regex {pattern!r}: the '{{' at character {i + 1} follows nothing to repeat "
                "(write \\{ for the character)"
            )
        if c in "*+?{":
            if c == "{":
                m = _QUANT.match(pattern, i)
                if m is None:
                    raise InvalidRegex(
                        f"regex {pattern!r}: the '{{' at character {i + 1} starts no count "
                        "{n}, {n,} or {n,m} (write \\{ for the character)"
                    )
                low, high = int(m.group(1)), m.group(3)
                if len(m.group(1)) > 4 or (high and len(high) > 4):
                    raise UnsupportedRegex(f"regex {pattern!r}: repetition counts this large are not supported")
                if high and int(high) < low:
                    raise InvalidRegex(
                        f"regex {pattern!r}: the count at character {i + 1} has its minimum above its maximum"
                    )
                text, i = m.group(0), m.end()
            else:
                text, i = c, i + 1
            if not can_repeat:
                raise (InvalidRegex if not out or out[-1] in ("(", "(?:", "|") else UnsupportedRegex)(
                    f"regex {pattern!r}: {c!r} at character {i - len(text) + 1} repeats nothing "
                    f"(write \\{c} for the character)"
                )
            if i < n and pattern[i] == "?":
                text, i = text + "?", i + 1
            elif i < n and pattern[i] == "+":
                raise UnsupportedRegex(f"regex {pattern!r}: possessive quantifiers are not supported")
            out.append(text)
            can_repeat = False
            continue
        can_repeat = True
        if c == "\\":
            text, i = _escape(pattern, i + 1, False)
            out.append(text)
        elif c == "[":
            text, i = _char_class(pattern, i + 1)
            out.append(text)
        elif c == ".":
            out.append(DOT)
            i += 1
        elif c == "^":
            out.append("^")
            can_repeat = False
            i += 1
        elif c == "$":
            out.append(DOLLAR)
            can_repeat = False
            i += 1
        elif c == "|":
            out.append("|")
            can_repeat = False
            i += 1
        elif c == "(":
            can_repeat = False
            if pattern.startswith("(?:", i):
                out.append("(?:")
                i += 3
            elif pattern.startswith("(?=", i) or pattern.startswith("(?!", i):
                out.append(pattern[i : i + 3])
                i += 3
            elif pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
                m = re.compile(r"\(\?<([a-zA-Z][a-zA-Z0-9]*)>").match(pattern, i)
                if m is None:
                    raise UnsupportedRegex(f"regex {pattern!r}: this named group is not supported")
                if m.group(1) in names:
                    raise InvalidRegex(f"regex {pattern!r}: named capturing group <{m.group(1)}> is already defined")
                groups += 1
                names[m.group(1)] = groups
                out.append(f"(?P<{m.group(1)}>")
                i = m.end()
            elif pattern.startswith("(?", i):
                raise UnsupportedRegex(f"regex {pattern!r}: the group construct at character {i + 1} is not supported")
            else:
                groups += 1
                out.append("(")
                i += 1
            depth += 1
        elif c == ")":
            if depth == 0:
                raise InvalidRegex(
                    f"regex {pattern!r}: the ')' at character {i + 1} closes no group (write \\) for the character)"
                )
            if out and out[-1] in ("(?=", "(?!"):
                raise UnsupportedRegex(f"regex {pattern!r}: an empty lookahead is not supported")
            depth -= 1
            out.append(")")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    if depth:
        raise InvalidRegex(f"regex {pattern!r}: a '(' is never closed (add ')', or write \\( for the character itself)")
    try:
        compiled = re.compile("".join(out))
    except re.error as e:  # pragma: no cover - the translation is meant to be valid
        raise UnsupportedRegex(f"regex {pattern!r}: {e}") from e
    if compiled.groups != groups:  # pragma: no cover
        raise UnsupportedRegex(f"regex {pattern!r}: group count differs after translation")
    return JavaPattern(pattern, compiled, groups, names)


def _expand(pattern: JavaPattern, m: re.Match[str], replacement: str) -> str:
    """``Matcher.appendExpandedReplacement`` for one match."""
    out: list[str] = []
    i = 0
    n = len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\":
            i += 1
            if i == n:
                raise InvalidRegex(
                    f"replacement {replacement!r}: the backslash at the end escapes nothing "
                    "(write \\\\ for a backslash)"
                )
            out.append(replacement[i])
            i += 1
        elif c == "$":
            i += 1
            if i == n:
                raise InvalidRegex(
                    f"replacement {replacement!r}: the '$' at the end names no group (write \\$ for a dollar sign)"
                )
            c = replacement[i]
            if c == "{":
                i += 1
                j = i
                while j < n and replacement[j].isascii() and replacement[j].isalnum():
                    j += 1
                name = replacement[i:j]
                if not name:
                    raise InvalidRegex(f"replacement {replacement!r}: '${{}}' names no group (expected ${{name}})")
                if j >= n or replacement[j] != "}":
                    raise InvalidRegex(f"replacement {replacement!r}: a '${{' is never closed with '}}'")
                if name[0].isdigit():
                    raise InvalidRegex(
                        f"replacement {replacement!r}: the group name {{{name}}} starts with a digit "
                        "(a name starts with a letter)"
                    )
                if name not in pattern.names:
                    raise InvalidRegex(f"replacement {replacement!r}: no group with name {{{name}}}")
                ref = pattern.names[name]
                i = j + 1
            else:
                if not ("0" <= c <= "9"):
                    raise InvalidRegex(
                        f"replacement {replacement!r}: a '$' is followed by no group number or "
                        "{name} (write \\$ for a dollar sign)"
                    )
                ref = ord(c) - ord("0")
                i += 1
                while i < n and "0" <= replacement[i] <= "9":
                    bigger = ref * 10 + ord(replacement[i]) - ord("0")
                    if pattern.groups < bigger:
                        break
                    ref = bigger
                    i += 1
            if ref > pattern.groups:
                raise InvalidRegex(f"replacement {replacement!r}: no group {ref}")
            group = m.group(ref)
            if group is not None:
                out.append(group)
        else:
            out.append(c)
            i += 1
    return "".join(out)


def replace(pattern: JavaPattern, text: str, replacement: str, *, first_only: bool = False) -> str:
    """``pattern.matcher(text).replaceAll(replacement)`` (or ``replaceFirst``)."""
    _bmp_only(text, "name")
    out: list[str] = []
    tail = 0  # appendPosition
    search_from = 0
    while search_from <= len(text):
        m = pattern.compiled.search(text, search_from)
        if m is None:
            break
        out.append(text[tail : m.start()])
        out.append(_expand(pattern, m, replacement))
        tail = m.end()
        if first_only:
            break
        search_from = m.end() + 1 if m.end() == m.start() else m.end()
    out.append(text[tail:])
    return "".join(out)
