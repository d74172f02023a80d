#!/usr/bin/env python3
"""Chat-template goldens: Debian's python3-jinja2 renders each real template in
tests/data/chat_templates/ the way transformers' apply_chat_template does
(transformers/utils/chat_template_utils.py: ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks, loopcontrols and the {% generation %} tag; raise_exception, strftime_now and
transformers' tojson), over many conversations. Writes tests/data/chat_templates/goldens.json.

Run from the repository root:  /usr/bin/python3 tools/chat/make_goldens.py
"""
import json
import os
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from constructs import CASES as CONSTRUCT_CASES

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "chat_templates")


class GenerationTag(Extension):
    """transformers' AssistantTracker: {% generation %}...{% endgeneration %} renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def compile_template(source):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


# Special-token strings as each model's tokenizer_config.json gives them (HF passes its
# special_tokens_map to the template).
SPECIAL = {
    "llama-2-7b-chat": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "llama-default-hf": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "llama-3-8b-instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama-3.1-8b-instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama-3.2-11b-vision-instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "pad_token": "<|finetune_right_pad_id|>"},
    "mistral-7b-instruct-v0.1": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "mixtral-8x7b-instruct-v0.1": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "mistral-7b-instruct-v0.3": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "mistral-nemo-instruct-2407": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "qwen1.5-72b-chat": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "qwen2.5-7b-instruct": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "qwen3-0.6b": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "chatml-openhermes": {"bos_token": "<s>", "eos_token": "<|im_end|>", "unk_token": "<unk>"},
    "dolphin-2.5-mixtral": {"bos_token": "<s>", "eos_token": "<|im_end|>", "unk_token": "<unk>"},
    "zephyr-7b-beta": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "zephyr-7b-gemma": {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"},
    "gemma-2b-it": {"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>"},
    "phi-3.5-mini-instruct": {"bos_token": "<s>", "eos_token": "<|endoftext|>", "unk_token": "<unk>"},
    "phi-3-small": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
    "hermes-2-pro-llama-3-8b": {"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"},
    "deepseek-coder-33b-instruct": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<|EOT|>"},
    "deepseek-r1": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
    "openchat-3.5": {"bos_token": "<s>", "eos_token": "<|end_of_turn|>", "unk_token": "<unk>"},
    "codellama-70b-instruct": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    "smollm3-3b": {"eos_token": "<|im_end|>", "pad_token": "<|im_end|>"},
}

S = {"role": "system", "content": "You are a helpful assistant."}


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": text}


TOOLS = [
    {"type": "function", "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["location"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two numbers, 1.5 and 2 included",
        "parameters": {"type": "object", "properties": {
            "a": {"type": "number", "description": "first"}, "b": {"type": "integer", "description": "second"}},
            "required": ["a", "b"]}}},
]

TOOL_CALL = {"id": "call9AbC1", "type": "function",
             "function": {"name": "get_current_weather", "arguments": {"location": "Paris, France", "unit": "celsius"}}}

CONVERSATIONS = [
    ("one user turn", [u("Hello")], {}),
    ("system + user", [S, u("Hello")], {}),
    ("three turns", [u("Hello"), a("Hi there"), u("Who are you?")], {}),
    ("system + five turns", [S, u("Hello"), a("Hi there"), u("Who are you"), a("   I am an assistant   "), u("Another question")], {}),
    ("six turns ending with assistant", [u("1+1?"), a("2"), u("2+2?"), a("4"), u("3+3?"), a("6")], {}),
    ("unicode and emoji", [S, u("Grüße 👋 — naïve café, 日本語のテキスト, Ελληνικά"), a("¡Hola! 😀🎉"), u("ß→ẞ? ﬁ ligature")], {}),
    ("braces and jinja-like text", [u("{{ not a tag }} {% if x %} {# c #} <|im_end|> [INST] </s> <s>"), a("{% endif %}}}"), u("'single' \"double\" \\ backslash \\n")], {}),
    ("whitespace", [S, u("  padded  \n\n line two\t"), a("\n\nleading newlines\n"), u(" \t ")], {}),
    ("empty content", [u(""), a(""), u("")], {}),
    ("crlf and control text", [u("line1\r\nline2\rline3\x07"), a("ok")], {}),
    ("system only", [S], {}),
    ("system + assistant", [S, a("I start.")], {}),
    ("roles not alternating", [u("Hello"), u("Again")], {}),
    ("assistant first", [a("I speak first"), u("Hi")], {}),
    ("two system messages", [S, {"role": "system", "content": "Second system."}, u("Hi")], {}),
    ("long system prompt", [{"role": "system", "content": "Rules:\n1. Be brief.\n2. Be kind.\n\n" + "x" * 300}, u("Go")], {}),
    ("tools offered", [S, u("What is the weather in Paris?")], {"tools": TOOLS}),
    ("tool call and result", [u("What is the weather in Paris?"), {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
                              {"role": "tool", "name": "get_current_weather", "tool_call_id": "call9AbC1", "content": "22.5"},
                              ], {"tools": TOOLS}),
    ("content parts", [{"role": "user", "content": [{"type": "text", "text": "Describe this."}]}], {}),
    ("numbers in content fields", [u("pi is 3.14159"), a("and e is 2.71828")], {}),
]


# Templates written for tool use only (transformers picks them as the "tool_use" template when
# tools are given): every conversation offers the tools.
TOOL_USE_ONLY = {"hermes-2-pro-llama-3-8b"}


def extra_vars(name, extra):
    """The kwargs passed to apply_chat_template; date_string pins Llama 3.1's strftime_now date."""
    kwargs = {"date_string": "26 Jul 2024"}
    if name in TOOL_USE_ONLY:
        kwargs["tools"] = TOOLS
    kwargs.update(extra)
    return kwargs


def main():
    cases = []
    names = sorted(f[:-len(".jinja")] for f in os.listdir(HERE) if f.endswith(".jinja"))
    for name in names:
        with open(os.path.join(HERE, name + ".jinja"), encoding="utf-8") as f:
            source = f.read()
        template = compile_template(source)
        special = SPECIAL[name]
        for index, (title, messages, extra) in enumerate(CONVERSATIONS):
            for agp in (True, False):
                kwargs = extra_vars(name, extra)
                variables = {**special, **{k: v for k, v in kwargs.items() if k != "tools"}}
                case = {"template": name, "conversation": index, "add_generation_prompt": agp}
                try:
                    case["output"] = template.render(messages=messages, tools=kwargs.get("tools"), documents=None,
                                                     add_generation_prompt=agp, **variables)
                except jinja2.exceptions.TemplateError as e:
                    if type(e) is jinja2.exceptions.TemplateError:
                        case["raises"] = str(e)  # raise_exception(message)
                    else:
                        case["error"] = type(e).__name__ + ": " + str(e)
                except Exception as e:  # TypeError etc. inside the template: ordo must fail too
                    case["error"] = type(e).__name__ + ": " + str(e)
                cases.append(case)
    out = {"generator": "tools/chat/make_goldens.py", "jinja2": jinja2.__version__,
           "special_tokens": {n: SPECIAL[n] for n in names},
           "tool_use_only": sorted(TOOL_USE_ONLY),
           "conversations": [{"title": t, "messages": m, "extra": e} for t, m, e in CONVERSATIONS],
           "cases": cases}
    with open(os.path.join(HERE, "goldens.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
        f.write("\n")
    constructs = []
    for source, variables in CONSTRUCT_CASES:
        case = {"template": source, "vars": variables}
        try:
            case["output"] = compile_template(source).render(**variables)
        except jinja2.exceptions.TemplateError as e:
            if type(e) is jinja2.exceptions.TemplateError:
                case["raises"] = str(e)
            else:
                case["error"] = type(e).__name__ + ": " + str(e)
        except Exception as e:
            case["error"] = type(e).__name__ + ": " + str(e)
        constructs.append(case)
    with open(os.path.join(HERE, "constructs.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/chat/make_goldens.py (cases: tools/chat/constructs.py)",
                   "jinja2": jinja2.__version__, "cases": constructs}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(len(constructs), "construct cases,", sum("output" in c for c in constructs), "with output")
    counts = {}
    for c in cases:
        k = "output" if "output" in c else "raises" if "raises" in c else "error"
        counts[k] = counts.get(k, 0) + 1
    print(len(cases), "cases", counts)


if __name__ == "__main__":
    main()
