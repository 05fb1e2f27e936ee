# Renders phi3-chat.jsonl: each chat of CHATS through its template, as
# transformers' apply_chat_template does (Python jinja2 3.1.6). Run from
# this folder: python3 render.py > phi3-chat.jsonl
import json

from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception

# The special tokens of each model's tokenizer_config.json.
MODELS = {
    "phi-3.5-mini-instruct": {"bos_token": "<s>", "eos_token": "<|endoftext|>"},
    "phi-4-mini-instruct": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
}

SYS = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "Tell me a story about Lily and Max."}
TOOLS = '[{"name": "get_weather", "description": "The weather in a city.", "parameters": {"city": {"type": "str"}}}]'
CHATS = [
    ("sys_user_gen", [SYS, USER], True),
    ("user_gen", [USER], True),
    ("user_no_gen", [USER], False),
    ("empty_system", [{"role": "system", "content": ""}, USER], True),
    ("multi_turn", [SYS, {"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello. How can I help?"},
                    {"role": "user", "content": "Count to three.\nThen stop."}], True),
    ("assistant_last", [USER, {"role": "assistant", "content": "Once upon a time…"}], False),
    ("unicode", [{"role": "user", "content": "Héllo wörld — ünïcode ✓ 😀 我想 {{ not a tag }}"}], True),
    ("tools_in_system", [{"role": "system", "content": "You are a helpful assistant with some tools.", "tools": TOOLS},
                         {"role": "user", "content": "What is the weather like in Paris today?"}], True),
    ("tools_null", [{"role": "system", "content": "Plain.", "tools": None}, USER], True),
    ("tool_result", [USER, {"role": "assistant", "content": '[{"name": "get_weather", "arguments": {"city": "Paris"}}]'},
                     {"role": "tool", "content": '{"temperature": 21}'}], True),
]

for model, tokens in MODELS.items():
    src = open(f"templates/{model}.jinja").read()
    tmpl = env.from_string(src)
    for case, messages, gen in CHATS:
        rendered = tmpl.render(messages=messages, tools=None, documents=None, add_generation_prompt=gen, **tokens)
        print(json.dumps({"case": case, "template": f"templates/{model}.jinja", "messages": messages,
                          "kwargs": {"add_generation_prompt": gen}, **tokens, "rendered": rendered}, ensure_ascii=False))
