"""
render_python.py renders every chat template in testdata/templates against every
captured request body in testdata/requests using the **same** Jinja2 setup that
HuggingFace's `transformers.PreTrainedTokenizerBase.apply_chat_template` uses,
and writes the results as JSON: to stdout, or with --out PATH bzip2-compressed
to PATH.

Output shape:

    {
      "jinja2": "<the Jinja2 version that rendered them>",
      "python": "<the Python version>",
      "now": "<the fixed clock strftime_now reads>",
      "renders": {
        "<template_name>/<request_name>": "<rendered text, or RENDER ERROR: ...>",
        ...
      }
    }

The committed reference, testdata/python/renders.json.bz2, is this script's
output with Jinja2 3.1.6 (see testdata/python/README.md for the command):
TestRequestsAgainstTemplates in requests_test.go compares the Go engine with
it byte for byte. After adding or changing a template or a request, run it
again and commit the new file.
"""

from __future__ import annotations

import argparse
import bz2
import json
import platform
import sys
from datetime import datetime
from pathlib import Path

import jinja2
import jinja2.ext  # noqa: F401  (registers loopcontrols extension)
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationExtension(jinja2.ext.Extension):
    """No-op {% generation %}...{% endgeneration %} block.

    HuggingFace tokenizers register an `AssistantTracker` extension that adds
    these tags to mark which spans count as model-generated for loss masking.
    For pure prompt rendering the tags are pass-through — the inner content
    is emitted verbatim. We register an equivalent no-op here so the rnj-1
    chat template (and any future template using the convention) renders
    instead of raising "Encountered unknown tag 'generation'".
    """

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body).set_lineno(lineno)


REPO_ROOT = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = REPO_ROOT / "testdata" / "templates"
REQUESTS_DIR = REPO_ROOT / "testdata" / "requests"


# ---- env setup: copied from transformers/tokenization_utils_base.py ----

def _raise_exception(message):
    raise TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(
        x,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=separators,
        sort_keys=sort_keys,
        default=str,
    )


def _from_json(x):
    return json.loads(x)


# strftime_now reads a fixed clock, so that the renders do not change with
# the day; requests_test.go gives the Go engine the same one.
FIXED_NOW = datetime(2025, 3, 7, 14, 5, 9)


def _strftime_now(format):
    return FIXED_NOW.strftime(format)


def make_env() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[jinja2.ext.loopcontrols, GenerationExtension],
    )
    env.filters["tojson"] = _tojson
    env.filters["from_json"] = _from_json
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


# ---- render context: must match buildRenderData() in requests_test.go ----

def build_context(req: dict) -> dict:
    return {
        "messages": req.get("messages"),
        "tools": req.get("tools"),
        "add_generation_prompt": True,
        "bos_token": "<s>",
        "eos_token": "</s>",
        "enable_thinking": False,
        "thinking": False,
        "reasoning_effort": "medium",
        "model_identity": "You are a helpful assistant.",
        "builtin_tools": [],
        "date": "2024-01-01",
        "date_string": "2024-01-01",
        "tools_in_user_message": False,
    }


def render_one(env, template_src: str, ctx: dict) -> str:
    try:
        compiled = env.from_string(template_src)
        return compiled.render(**ctx)
    except Exception as e:  # TemplateError, UndefinedError, anything raised by the template
        return f"RENDER ERROR: {e}\n"


def normalize_tool_call_arguments(req: dict) -> None:
    """Mirror Kronk's conversion of OpenAI JSON argument strings to maps."""
    for message in req.get("messages", []):
        if message.get("role") != "assistant":
            continue
        for tool_call in message.get("tool_calls", []):
            function = tool_call.get("function", {})
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                    if isinstance(arguments, str):
                        arguments = json.loads(arguments)
                except json.JSONDecodeError:
                    continue
                if isinstance(arguments, dict) or arguments is None:
                    function["arguments"] = arguments


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write bzip2-compressed JSON here instead of plain JSON to stdout")
    args = ap.parse_args()
    env = make_env()

    templates = sorted(TEMPLATES_DIR.glob("*.jinja"))
    requests = sorted(REQUESTS_DIR.glob("*.json"))

    if not templates:
        print(f"no templates found under {TEMPLATES_DIR}", file=sys.stderr)
        return 1
    if not requests:
        print(f"no requests found under {REQUESTS_DIR}", file=sys.stderr)
        return 1

    # Pre-parse requests once, since we render every template against every one.
    parsed_requests = {p.stem: json.loads(p.read_text()) for p in requests}
    for req in parsed_requests.values():
        normalize_tool_call_arguments(req)

    out: dict[str, str] = {}
    for tpl_path in templates:
        tpl_name = tpl_path.stem
        tpl_src = tpl_path.read_text()
        for req_name, req in parsed_requests.items():
            ctx = build_context(req)
            ctx.update(req.get("chat_template_kwargs", {}).get(tpl_name, {}))
            out[f"{tpl_name}/{req_name}"] = render_one(env, tpl_src, ctx)

    doc = {
        "jinja2": jinja2.__version__,
        "python": platform.python_version(),
        "now": FIXED_NOW.isoformat(),
        "renders": out,
    }
    if args.out:
        data = json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=0).encode()
        Path(args.out).write_bytes(bz2.compress(data, 9))
    else:
        json.dump(doc, sys.stdout, ensure_ascii=False, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
