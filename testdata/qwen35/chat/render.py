"""render.py writes qwen35.chat.jsonl: Qwen3.5's chat template
(tokenizer/internal/jinja/testdata/templates/Qwen3.5-35B-A3B-Q8_0.jinja, the
template of Qwen/Qwen3.5-35B-A3B's GGUF) rendered by Python's Jinja2 in the
environment of Hugging Face transformers' apply_chat_template (the one
render_python.py builds), with apply_chat_template's variables: messages,
tools (None without), documents (None), add_generation_prompt and the
keyword arguments (enable_thinking) as given, unset when not.

Run from the repository root:

    python3 testdata/qwen35/chat/render.py > testdata/qwen35/chat/qwen35.chat.jsonl
"""

import importlib.util
import json
import platform
import sys
from pathlib import Path

import jinja2

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("render_python", ROOT / "tokenizer/internal/jinja/scripts/render_python.py")
rp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rp)
TEMPLATE = ROOT / "tokenizer/internal/jinja/testdata/templates/Qwen3.5-35B-A3B-Q8_0.jinja"

Q = {"role": "user", "content": "What is 17 * 3?"}
SYS = {"role": "system", "content": "You are a terse calculator."}
WEATHER = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                           "required": ["city"]}}}]
CALL = {"role": "assistant", "content": "", "reasoning_content": "I need the weather tool.",
        "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]}

CASES = [
    ("thinking by default", [Q], {"add_generation_prompt": True}),
    ("enable_thinking true", [Q], {"add_generation_prompt": True, "enable_thinking": True}),
    ("enable_thinking false", [Q], {"add_generation_prompt": True, "enable_thinking": False}),
    ("system prompt", [SYS, Q], {"add_generation_prompt": True, "enable_thinking": False}),
    ("reasoning_content of an earlier turn is dropped", [
        SYS, Q, {"role": "assistant", "content": "51", "reasoning_content": "17 * 3 = 51."},
        {"role": "user", "content": "And 17 * 4?"}], {"add_generation_prompt": True}),
    ("reasoning_content after the last query is kept", [
        Q, {"role": "assistant", "content": "51", "reasoning_content": "\n17 * 3 = 51.\n"}], {"add_generation_prompt": False}),
    ("a think block in the content is split off", [
        Q, {"role": "assistant", "content": "<think>\nseventeen threes\n</think>\n\n51"}], {"add_generation_prompt": False}),
    ("an earlier think block in the content is dropped", [
        Q, {"role": "assistant", "content": "<think>\nseventeen threes\n</think>\n\n51"},
        {"role": "user", "content": "Thanks"}], {"add_generation_prompt": True, "enable_thinking": False}),
    ("empty reasoning_content", [
        Q, {"role": "assistant", "content": "51", "reasoning_content": ""}], {"add_generation_prompt": False}),
    ("tools with a system prompt", [SYS, {"role": "user", "content": "Weather in Paris?"}],
     {"add_generation_prompt": True, "tools": WEATHER}),
    ("a tool call, its result and the reasoning of the loop", [
        {"role": "user", "content": "Weather in Paris?"}, CALL,
        {"role": "tool", "content": "{\"temp\": 18, \"sky\": \"clear\"}"}],
     {"add_generation_prompt": True, "tools": WEATHER}),
    ("two tool results in one user turn", [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": "Checking both.", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome", "days": 1, "units": ["C", "F"]}}}]},
        {"role": "tool", "content": "18"}, {"role": "tool", "content": "24"}],
     {"add_generation_prompt": True, "enable_thinking": False, "tools": WEATHER}),
    ("no user query", [SYS], {"add_generation_prompt": True}),
    ("a system message later", [Q, SYS], {"add_generation_prompt": True}),
]


def main():
    env = rp.make_env()
    tmpl = env.from_string(TEMPLATE.read_text())
    out = sys.stdout
    for name, messages, kwargs in CASES:
        ctx = {"messages": messages, "tools": None, "documents": None}
        ctx.update(kwargs)
        line = {"case": name, "messages": messages,
                "kwargs": {k: v for k, v in kwargs.items() if k != "tools"}}
        if "tools" in kwargs:
            line["tools"] = kwargs["tools"]
        try:
            line["rendered"] = tmpl.render(**ctx)
        except jinja2.exceptions.TemplateError as e:
            line["error"] = str(e)
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"jinja2 {jinja2.__version__}, python {platform.python_version()}", file=sys.stderr)


if __name__ == "__main__":
    main()
