#!/usr/bin/env python3
"""Goldens for the chat end-to-end tests (tests/data/chat/goldens.json): Hugging Face
transformers' apply_chat_template(tokenize=True) on a copy of models/stories260K with
tests/data/chat/tokenizer_config.json (a chat template over the model's own <s> and </s>),
through the slow LlamaTokenizer.

Run from the repository root:
  source "$REFENV/env.sh" && /usr/bin/python3 tools/chat/make_cli_goldens.py
"""
import json
import os
import shutil
import tempfile

from transformers import LlamaTokenizer

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

CONVERSATIONS = [
    [{"role": "user", "content": "Tell me a story about a cat."}],
    [{"role": "system", "content": "You are a storyteller."}, {"role": "user", "content": "Tell me a story about a cat."}],
    [{"role": "system", "content": " You are a storyteller. "}, {"role": "user", "content": "Hi!"},
     {"role": "assistant", "content": "Once upon a time, there was a dog."}, {"role": "user", "content": "What did the dog do?"}],
    [{"role": "user", "content": "Grüße 👋 {{ x }} </s> <s>"}],
]


def main():
    with tempfile.TemporaryDirectory() as d:
        for f in ("config.json", "generation_config.json", "tokenizer.model"):
            shutil.copy(os.path.join(ROOT, "models", "stories260K", f), d)
        shutil.copy(os.path.join(ROOT, "tests", "data", "chat", "tokenizer_config.json"), d)
        tok = LlamaTokenizer.from_pretrained(d)
        cases = []
        for conv in CONVERSATIONS:
            for agp in (True, False):
                text = tok.apply_chat_template(conv, add_generation_prompt=agp, tokenize=False)
                ids = tok.apply_chat_template(conv, add_generation_prompt=agp, tokenize=True)
                cases.append({"messages": conv, "add_generation_prompt": agp, "text": text, "ids": ids})
    import transformers
    out = {"generator": "tools/chat/make_cli_goldens.py", "transformers": transformers.__version__, "cases": cases}
    with open(os.path.join(ROOT, "tests", "data", "chat", "goldens.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(len(cases), "cases")


if __name__ == "__main__":
    main()
