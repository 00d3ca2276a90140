"""Text hygiene: what memlane prints or injects, what a one-line field may hold, and the
normalised readings of a note that the injection guard screens.

``strip_controls`` removes what a terminal or a model would act on but a reader cannot see:
ECMA-48 escape sequences (CSI, OSC, DCS/APC/PM/SOS and two-byte ESC sequences, in their 7-bit
and 8-bit forms), C0 controls but newline and tab, DEL, C1 controls, the bidi embeddings,
overrides, isolates and marks that reorder what is shown (the "Trojan Source" trick,
CVE-2021-42574), and Unicode tag characters (invisible text a model still reads).

``line_break_chars`` names what a one-line field (a name, description, title or recall
keyword) must refuse: every control character (category Cc: ``\\n \\r \\v \\f``, ``\\x1c``-``\\x1e``,
``\\x85`` and the rest of C0 and C1) and the line and paragraph separators U+2028, U+2029.
A tab is allowed by default: it breaks no line in a file, an index line or a terminal, and
editors insert it; pass ``allow_tab=False`` for identifiers.

``normalise`` follows the *skeleton* idea of Unicode TR39 (security mechanisms): text that
looks alike to a reader, or to a model, gets one reading, so a rule written for plain
lower-case words also sees look-alike, invisible-character and compatibility-form spellings.
In order:

1. HTML character references decoded (``&#105;gnore``) and ``<br>`` read as a line break;
2. tag characters U+E0020-E007E become the ASCII they encode ("ASCII smuggling");
3. line-breaking controls (CR, VT, FF, FS/GS/RS, NEL) become newlines; other controls, escape
   sequences and bidi controls go as in ``strip_controls``, except that the text inside an
   OSC or DCS string stays (a terminal hides it, a model reads it);
4. NFKC: fullwidth letters, mathematical alphanumerics, ligatures, circled letters fold, and
   conjoining Hangul jamo compose;
5. format characters (category Cf: zero-width space and joiners, word joiner, soft hyphen,
   BOM, bidi controls) and variation selectors are removed;
6. per letter: diacritics dropped (NFD, combining marks out) and look-alikes of Latin letters
   folded to Latin, from a hand-written table of the common Cyrillic, Greek, Armenian,
   Cherokee and small-capital confusables (not Unicode's confusables.txt); typographic quotes
   fold to ASCII ones. Scripts without look-alikes (Hangul, Han) are left as they are;
7. lower case; 8. all whitespace (newlines, U+2028, ...) collapsed to one space.

``readings`` adds two more: leetspeak folded inside words that mix letters with 0 1 3 4 5 7 @ $
(``1gn0r3`` -> ``ignore``, ``ru1es`` -> ``rules``; ``1`` read as ``i`` or ``l``, whichever spells
a word the caller looks for) and letter-spacing collapsed (``i g n o r e``, ``I.g.n.o.r.e`` ->
``ignore``; three or more single characters, a double space still separates words), and one
without HTML comments and link targets (``Ignore all <!-- x --> previous``, ``Ignore all
[previous](x) instructions``). Screening every reading is the defence
OWASP's LLM01 (prompt injection) asks for against stored, indirect injection. Patterns are
compiled on first use, never at import (the hook path counts import time).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from functools import cache

__all__ = ["escape_controls", "is_one_line", "line_break_chars", "normalise", "reading", "readings", "strip_controls",
           "unmark"]

# Latin letter -> its look-alikes, written as escapes so a reviewer can tell them apart.
_LOOKALIKES = {
    "a": "\u0430\u03b1\u0251\u1d00",        # Cyrillic а, Greek α, Latin alpha ɑ, small capital ᴀ
    "A": "\u0410\u0391\u13aa",              # Cyrillic А, Greek Α, Cherokee Ꭺ
    "B": "\u0412\u0392\u0299",              # Cyrillic В, Greek Β, small capital ʙ
    "b": "\u042c\u044c",                    # Cyrillic Ь ь
    "c": "\u0441\u03f2\u1d04",              # Cyrillic с, Greek lunate sigma ϲ, small capital ᴄ
    "C": "\u0421\u03f9",                    # Cyrillic С, Greek Ϲ
    "d": "\u0501\u1d05",                    # Cyrillic ԁ, small capital ᴅ
    "e": "\u0435\u04bd\u1d07\u212e",        # Cyrillic е ҽ, small capital ᴇ, estimated ℮
    "E": "\u0415\u0395\u13ac",              # Cyrillic Е, Greek Ε, Cherokee Ꭼ
    "f": "\ua730",                          # small capital ꜰ
    "g": "\u0261\u0262\u0581\u050d",        # script ɡ, small capital ɢ, Armenian ց, Cyrillic ԍ
    "G": "\u050c\u13c0",                    # Cyrillic Ԍ, Cherokee Ꮐ
    "h": "\u04bb\u0570\u029c",              # Cyrillic һ, Armenian հ, small capital ʜ
    "H": "\u041d\u0397\u13bb",              # Cyrillic Н, Greek Η, Cherokee Ꮋ
    "i": "\u0456\u03b9\u0131\u026a",        # Cyrillic і, Greek ι, dotless ı, small capital ɪ
    "I": "\u0406\u0399\u04c0",              # Cyrillic І, Greek Ι, Cyrillic palochka Ӏ
    "j": "\u0458\u03f3\u0237\u1d0a",        # Cyrillic ј, Greek ϳ, dotless ȷ, small capital ᴊ
    "J": "\u0408\u13ab",                    # Cyrillic Ј, Cherokee Ꭻ
    "k": "\u043a\u03ba\u1d0b",              # Cyrillic к, Greek κ, small capital ᴋ
    "K": "\u041a\u039a",                    # Cyrillic К, Greek Κ
    "l": "\u04cf\u01c0\u029f",              # Cyrillic ӏ, click ǀ, small capital ʟ
    "L": "\u13de",                          # Cherokee Ꮮ
    "m": "\u043c\u1d0d",                    # Cyrillic м, small capital ᴍ
    "M": "\u041c\u039c\u13b7",              # Cyrillic М, Greek Μ, Cherokee Ꮇ
    "n": "\u0578\u03b7\u043f\u0274",        # Armenian ո, Greek η, Cyrillic п, small capital ɴ
    "N": "\u039d",                          # Greek Ν
    "o": "\u043e\u03bf\u0585\u1d0f",        # Cyrillic о, Greek ο, Armenian օ, small capital ᴏ
    "O": "\u041e\u039f\u0555",              # Cyrillic О, Greek Ο, Armenian Օ
    "p": "\u0440\u03c1\u1d18",              # Cyrillic р, Greek ρ, small capital ᴘ
    "P": "\u0420\u03a1\u13e2",              # Cyrillic Р, Greek Ρ, Cherokee Ꮲ
    "q": "\u051b",                          # Cyrillic ԛ
    "r": "\u0433\u0280",                    # Cyrillic г, small capital ʀ
    "s": "\u0455\ua731",                    # Cyrillic ѕ, small capital ꜱ
    "S": "\u0405\u13da",                    # Cyrillic Ѕ, Cherokee Ꮪ
    "t": "\u0442\u03c4\u1d1b",              # Cyrillic т, Greek τ, small capital ᴛ
    "T": "\u0422\u03a4\u13a2",              # Cyrillic Т, Greek Τ, Cherokee Ꭲ
    "u": "\u057d\u03c5\u1d1c",              # Armenian ս, Greek υ, small capital ᴜ
    "U": "\u054d",                          # Armenian Ս
    "v": "\u0475\u03bd\u1d20",              # Cyrillic ѵ, Greek ν, small capital ᴠ
    "V": "\u0474\u13d9",                    # Cyrillic Ѵ, Cherokee Ꮩ
    "w": "\u051d\u0461\u03c9\u1d21",        # Cyrillic ԝ ѡ, Greek ω, small capital ᴡ
    "W": "\u051c\u13b3",                    # Cyrillic Ԝ, Cherokee Ꮃ
    "x": "\u0445\u03c7",                    # Cyrillic х, Greek χ
    "X": "\u0425\u03a7",                    # Cyrillic Х, Greek Χ
    "y": "\u0443\u03b3\u04af\u028f",        # Cyrillic у ү, Greek γ, small capital ʏ
    "Y": "\u0423\u04ae\u03a5",              # Cyrillic У Ү, Greek Υ
    "z": "\u1d22",                          # small capital ᴢ
    "Z": "\u0396\u13c3",                    # Greek Ζ, Cherokee Ꮓ
    "'": "\u2018\u2019\u201b\u02bc\u2032",  # typographic apostrophes and prime
    '"': "\u201c\u201d\u201f\u2033",        # typographic double quotes and double prime
}
_LEET_TABLE = str.maketrans({"0": "o", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})  # 1: i or l
_SPELLABLE = frozenset("abcdefghijklmnopqrstuvwxyz013457@$")
_NAMES = {"\n": "LINE FEED", "\r": "CARRIAGE RETURN", "\t": "CHARACTER TABULATION",
          "\v": "LINE TABULATION", "\f": "FORM FEED", "\x00": "NULL", "\x1b": "ESCAPE",
          "\x1c": "INFORMATION SEPARATOR FOUR", "\x1d": "INFORMATION SEPARATOR THREE",
          "\x1e": "INFORMATION SEPARATOR TWO", "\x1f": "INFORMATION SEPARATOR ONE",
          "\x7f": "DELETE", "\x85": "NEXT LINE"}


_CONTROLS = r"\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2060\ufeff\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f"
_INVISIBLE = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180b-\u180f\u200b-\u200f\u202a-\u202e"
              "\u2060-\u2064\u2066-\u206f\ufe00-\ufe0f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
              "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef"
              # fillers and blanks that render as nothing or a gap: a word split by one still reads whole
              "\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
# where a letter may carry a diacritic or be a look-alike: Latin-1 to Latin Extended-B, IPA,
# Greek, Cyrillic, Armenian, Cherokee, phonetic extensions, Latin Extended Additional, Greek
# Extended, quotes and primes, letterlike symbols, Latin Extended-D
_FOLDABLE = ("\u00c0-\u024f\u0250-\u02af\u02bc\u0370-\u058f\u13a0-\u13ff\u1d00-\u1dbf\u1e00-\u1fff"
             "\u2018-\u201f\u2032\u2033\u212e\ua720-\ua7ff" + _MARKS)
_SEP, _TOKEN = r"[ .\-_*+~/·•]", r"[\w@$]"


class _Compiled(dict):
    """Patterns by name, each compiled the first time it is asked for (a fresh hook process
    that strips one plain text needs one of them, not all thirteen)."""

    def __init__(self, sources: dict[str, tuple[str, int]]):
        super().__init__()
        self.sources = sources

    def __missing__(self, name: str) -> re.Pattern:
        pattern = self[name] = re.compile(*self.sources[name])
        return pattern


@cache
def _re() -> dict[str, re.Pattern]:
    """Every pattern this module uses, by name, each compiled once, on first use."""
    csi, esc = r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?", r"\x1b[ -/]*[0-~]?"
    return _Compiled({
        # for display: a string sequence (OSC, DCS, SOS, PM, APC) goes with its payload, up to
        # its terminator (BEL or ST) or the end of the line
        "controls": (rf"{csi}|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c\n]*"
                     rf"(?:\x07|\x1b\\|\x9c)?|{esc}|[{_CONTROLS}]", 0),
        # for screening: the payload of a string sequence is text a model reads, so it stays
        "screen": (rf"{csi}|{esc}|[{_CONTROLS}]", 0),
        "breaks": (r"[\r\v\f\x1c-\x1e\x85]|<br\s*/?>", re.I),
        "suspect": (f"[{_CONTROLS}]", 0),
        "tags": (r"[\U000e0020-\U000e007e]", 0),
        "invisible": (f"[{_INVISIBLE}]", 0),
        "foldable": (f"[{_FOLDABLE}]", 0),
        "leet": (r"[a-z][013457@$]|[013457@$][a-z]", 0),
        "token": (r"[a-z0-9@$]*", 0),
        "token_end": (r"[a-z0-9@$]*\Z", 0),
        "spaced_hint": (f"{_SEP}{_TOKEN}{_SEP}{_TOKEN}(?:{_SEP}|(?!{_TOKEN}))", 0),
        "spaced": (rf"(?<!{_TOKEN}){_TOKEN}(?:{_SEP}{_TOKEN}){{2,}}(?!{_TOKEN})", 0),
        "spacer": (_SEP, 0),
        # for the ``unmarked`` reading: what a renderer hides or shortens inside a phrase
        "comment": (r"<!--.*?(?:-->|\Z)", re.S),
        "link": (r"!?\[([^\]\n]{0,80})\]\([^)\n]{0,200}\)", 0),
        # labels hold no unescaped bracket (CommonMark), which also keeps a run of "[^" linear
        "reference_link": (r"!?\[([^\]\n]{0,80})\]\[[^\][\n]{0,999}\]", 0),  # [text][ref], [text][]
        "footnote": (r"\[\^[^\][\n]{1,999}\]", 0),  # [^1]: a superscript when rendered (labels: 999 at most)
        "html_tag": (r"</?[a-z][a-z0-9-]{0,20}(?:[ \t\n][^<>]{0,200})?/?>", 0),  # <b>, </i>, <span class=x>
        "emphasis": (r"\*+|~~", 0),  # pre**vious**, ~~struck~~: markers a renderer does not show
    })


@cache
def _lookalikes() -> dict[str, str]:
    """Look-alike -> Latin letter (or ASCII quote)."""
    return {c: latin for latin, alikes in _LOOKALIKES.items() for c in alikes}


@cache
def _fold(ch: str) -> str:
    """One character read plainly: diacritics dropped, a look-alike as its Latin letter."""
    bare = "".join(c for c in unicodedata.normalize("NFD", ch) if not unicodedata.combining(c))
    return "".join(_lookalikes().get(c, c) for c in bare)


def whole_characters(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD — bytes of another encoding that Python read as
    surrogates (argv, stdin, file names), or half a character cut from its pair (JSON's
    ``"\\ud83d"``); a pair already decoded as one character stays. What comes out encodes as UTF-8."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def is_whole(text: str) -> bool:
    """Whether ``text`` holds no lone surrogate (it encodes as UTF-8 as it is)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def strip_controls(text: str) -> str:
    """``text`` without terminal escape sequences, control characters (newline and tab stay),
    bidi controls or tag characters: safe to print to a terminal or hand to an agent."""
    return _re()["controls"].sub("", text or "")


def escape_controls(text: str) -> str:
    """``text`` with each control, bidi or tag character ``strip_controls`` takes out written as an
    escape (``\\x1b``, ``\\u202e``) instead: a line that quotes what a user typed (an error naming
    a path) shows what is there, and the terminal runs none of it."""
    return _re()["suspect"].sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text or "")


def line_break_chars(text: str, *, allow_tab: bool = True) -> list[str]:
    """The characters that keep ``text`` from being one line, named once each in order of
    appearance, e.g. ``["U+2028 LINE SEPARATOR"]``; empty when ``text`` is one line."""
    found: list[str] = []
    for ch in dict.fromkeys(text or ""):
        if (ch == "\t" and allow_tab) or unicodedata.category(ch) not in ("Cc", "Zl", "Zp"):
            continue
        found.append(f"U+{ord(ch):04X} {_NAMES.get(ch) or unicodedata.name(ch, 'CONTROL CHARACTER')}")
    return found


def is_one_line(text: str, *, allow_tab: bool = True) -> bool:
    """True when ``text`` holds no line or paragraph separator and no control character."""
    return not line_break_chars(text, allow_tab=allow_tab)


def prepare(text: str) -> str:
    """Steps 1-7 of the normalisation: ``normalise`` without the whitespace collapse, so line
    structure survives (the shell rules read line by line). Each step first looks whether it
    has anything to do: most notes are plain text and cost a few scans."""
    rx, text = _re(), text or ""
    if "&" in text:
        import html  # only for a text with an entity in it (~2 ms to import)

        text = html.unescape(text)
    wide = not text.isascii()
    if wide and rx["tags"].search(text):
        text = rx["tags"].sub(lambda m: chr(ord(m.group(0)) - 0xE0000), text)
    if "<" in text or rx["suspect"].search(text):
        text = rx["screen"].sub("", rx["breaks"].sub("\n", text))
    if wide:
        text = unicodedata.normalize("NFKC", text)
        if rx["invisible"].search(text):
            text = rx["invisible"].sub("", text)
        for ch in set(rx["foldable"].findall(text)):
            text = text.replace(ch, _fold(ch))
    return text.lower()


def collapse(text: str) -> str:
    """Every run of whitespace (line breaks included) as one space, none at either end."""
    return " ".join(text.split())


def normalise(text: str) -> str:
    """The reading the rules screen first: see the module docstring for the steps."""
    return collapse(prepare(text))


def _unleet(token: str, words: frozenset[str] | None) -> str | None:
    """``token`` with leetspeak folded, or None when ``words`` is given and no folding is one
    of them. ``1`` reads as ``i`` or ``l``, whichever makes a word."""
    if words is not None and not _SPELLABLE.issuperset(token):
        return None  # another digit in it: it cannot spell a word
    token = token.translate(_LEET_TABLE)
    ones = token.count("1")
    # every mix of i and l up to four 1s; past that only all-i and all-l (b1a1c1d1e1: 32 mixes)
    spellings = itertools.product("il", repeat=ones) if ones <= 4 else (("i",) * ones, ("l",) * ones)
    for letters in spellings:
        spelled = token.replace("1", "{}").format(*letters)
        if words is None or spelled in words:
            return spelled
    return token.replace("1", "i") if words is None else None


def deleet(text: str, words: frozenset[str] | None = None) -> str:
    """Leetspeak folded inside words that mix letters with 0 1 3 4 5 7 @ $ (a number on its
    own stays a number): all of them, or, given ``words``, only those that then spell one
    of ``words`` ("1gn0r3" -> "ignore", "ru1es" -> "rules"; "v0" and "sha256" stay)."""
    rx, pieces, last, done = _re(), [], 0, 0
    for pair in rx["leet"].finditer(text):  # a letter next to a leet digit: find its word
        if pair.start() < done:
            continue
        start = rx["token_end"].search(text, max(0, pair.start() - 40), pair.start()).start()
        done = rx["token"].match(text, pair.end()).end()
        folded = _unleet(text[start:done], words)
        if folded is not None:
            pieces += [text[last:start], folded]
            last = done
    return "".join(pieces) + text[last:] if pieces else text


def despace(text: str) -> str:
    """Letter-spacing collapsed: three or more single characters joined by single spaces,
    dots, dashes or the like become one word (``i g n o r e`` -> ``ignore``); two spaces still
    part words."""
    rx = _re()
    if not rx["spaced_hint"].search(text):
        return text
    return rx["spaced"].sub(lambda m: rx["spacer"].sub("", m.group(0)), text)


def unmark(text: str) -> str:
    """``text`` without what a rendered note does not show inside a phrase: HTML comments and
    tags, emphasis markers, the targets of markdown links, inline or by reference (their text
    stays), and footnote marks. ``pre<!-- x -->vious`` and ``pre**vious**`` render ``previous``."""
    rx = _re()
    if "<!--" in text:
        text = rx["comment"].sub("", text)
    if "<" in text:
        text = rx["html_tag"].sub("", text)
    if "*" in text or "~~" in text:
        text = rx["emphasis"].sub("", text)
    if "](" in text:
        text = rx["link"].sub(lambda m: m.group(1), text)
    if "][" in text:
        text = rx["reference_link"].sub(lambda m: m.group(1), text)
    if "[^" in text:
        text = rx["footnote"].sub("", text)
    return text


def _marked(text: str) -> bool:
    """Whether ``text`` holds anything ``unmark`` takes out."""
    return "<" in text or "*" in text or "~~" in text or "](" in text or "][" in text or "[^" in text


def reading(name: str, text: str, words: frozenset[str] | None = None) -> str:
    """One reading of ``text``: ``lines`` (normalised, line breaks kept), ``plain``
    (normalised), ``leet`` (plain, leetspeak folded when it spells one of ``words``),
    ``spaced`` (letter-spacing collapsed, then all leetspeak folded) or ``unmarked`` (plain
    without HTML comments and tags, emphasis markers, link targets and footnote marks: ``unmark``)."""
    if name == "lines":
        return prepare(text)
    if name == "spaced":
        return collapse(deleet(despace(prepare(text))))
    if name == "unmarked":
        return collapse(unmark(prepare(text)))
    plain = normalise(text)
    return deleet(plain, words) if name == "leet" else plain


def readings(text: str, words: frozenset[str] | None = None) -> dict[str, str]:
    """Every reading of ``text``, by name (see ``reading``); one equal to a reading before it,
    or ``spaced`` when there is no letter-spacing, is left out."""
    pre = prepare(text)
    plain = collapse(pre)
    out = {"lines": pre, "plain": plain}
    if (leet := deleet(plain, words)) != plain:
        out["leet"] = leet
    if (spaced := despace(pre)) != pre and (spaced := collapse(deleet(spaced))) not in out.values():
        out["spaced"] = spaced
    if _marked(pre) and (unmarked := collapse(unmark(pre))) not in out.values():
        out["unmarked"] = unmarked
    return out
