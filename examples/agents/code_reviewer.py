#!/usr/bin/env python3
"""Scripted code reviewer for pipelines/code.yaml (the `command` adapter's example agent).

Passes the code when QA (which ran the unit tests) exited 0, else fails it as `Important` with
the failing check named, so the implementer revises. Deterministic, standard library only.
"""
import json
import os
import re
import subprocess
import sys


def main():
    prompt = sys.stdin.read()
    session = os.environ["CRUMB_SESSION_DIR"]
    solution = os.path.join(session, "artifacts", "code", "solution.py")
    has_code = os.path.exists(solution)
    qa_passed = re.search(r"^QA exited 0\.", prompt, re.MULTILINE) is not None
    if qa_passed and has_code:
        dims, body, extra = [5, 5, 4, 4, 4, 4], "meets the spec; the tests pass", {}
    else:
        dims = [2, 5 if qa_passed else 0, 3, 2, 2, 3]
        body = "the tests do not pass"
        extra = {"feedback": "make the unit tests pass; see the failing check's output",
                 "deviation": {"type": "Important"}}
    scores = {f"D{i + 1}": {"score": s, "source": "qa-check-effect" if i == 1 else "verifier-llm"}
              for i, s in enumerate(dims)}
    total = sum(dims)
    scores.update(aggregate=total, verdict="PASS" if total >= 24 else "FAIL", **extra)
    print(f"code-reviewer: QA {'passed' if qa_passed else 'failed'}")
    event = {"kind": "judge.score", "body": body, "scores": scores}
    subprocess.run(["crumb", "event"], input=json.dumps(event), text=True, check=True,
                   stdout=subprocess.DEVNULL)
    print(json.dumps({"usage": {"input_tokens": 1100, "output_tokens": 140,
                                "reasoning_tokens": 40, "cost_usd": 0.0,
                                "model": "example-code-reviewer"}}))


if __name__ == "__main__":
    main()
