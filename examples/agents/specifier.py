#!/usr/bin/env python3
"""Scripted specifier for pipelines/code.yaml (the `command` adapter's example agent).

Writes artifacts/code/SPEC.md for a `slugify(text)` module with numbered acceptance criteria and
reports a `spec` event listing them. Deterministic and standard library only.
"""
import json
import os
import re
import subprocess
import sys

CRITERIA = [
    "slugify('Hello World') == 'hello-world'",
    "runs of spaces and punctuation become one '-'",
    "no leading or trailing '-'",
    "slugify('') == ''",
]


def main():
    prompt = sys.stdin.read()
    match = re.search(r"^> (.+)$", prompt, re.MULTILINE)
    task = match.group(1).strip() if match else "the task"
    session = os.environ["CRUMB_SESSION_DIR"]
    path = os.path.join(session, "artifacts", "code", "SPEC.md")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines = [f"# Spec: {task}", "", "`code/solution.py` offers `slugify(text: str) -> str`.", "",
             "Acceptance criteria:", ""]
    lines += [f"{i + 1}. {c}" for i, c in enumerate(CRITERIA)]
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    print(f"specifier: wrote {len(CRITERIA)} criteria to artifacts/code/SPEC.md")
    event = {"kind": "spec", "body": "slugify(text) -> str, lower-case words joined by '-'",
             "data": {"acceptance_criteria": CRITERIA}}
    subprocess.run(["crumb", "event"], input=json.dumps(event), text=True, check=True,
                   stdout=subprocess.DEVNULL)
    print(json.dumps({"usage": {"input_tokens": 700, "output_tokens": 150,
                                "reasoning_tokens": 16, "cost_usd": 0.0,
                                "model": "example-specifier"}}))


if __name__ == "__main__":
    main()
