#!/usr/bin/env python3
"""Scripted reviewer for pipelines/doc-review.yaml (the `command` adapter's example agent).

Reads the draft the writer left in the session's artifacts and scores it on doc-review's rubric
(D1 accuracy ×2, D2 checks pass, D3 clarity ×2; out of 25) with one `judge.score` event: a pass when QA exited 0 and the draft has a title and 150+ words, else a
FAIL with feedback. Set CRUMB_EXAMPLE_FAIL_FIRST=1 to fail the first review on purpose (the
writer then revises). pipelines/cross-verify.yaml runs it twice in parallel, naming each judge
in argv[1]; with CRUMB_EXAMPLE_HOLD=<file> a judge waits for that file before scoring (tests
use it to hold both judges mid-turn). Deterministic and standard library only.
"""
import json
import os
import re
import subprocess
import sys
import time

# doc-review.yaml's rubric weights for D1, D2, D3.
WEIGHTS = [2, 1, 2]


def earlier_reviews(transcript):
    """How many `judge.score` events the transcript already holds."""
    with open(transcript, encoding="utf-8") as lines:
        return sum(1 for line in lines if '"kind":"judge.score"' in line.replace(" ", ""))


def hold():
    """Wait for the CRUMB_EXAMPLE_HOLD file, if one is named."""
    gate = os.environ.get("CRUMB_EXAMPLE_HOLD")
    while gate and not os.path.exists(gate):
        time.sleep(0.05)


def main():
    prompt = sys.stdin.read()
    name = sys.argv[1] if len(sys.argv) > 1 else "reviewer"
    hold()
    session = os.environ["CRUMB_SESSION_DIR"]
    draft_path = os.path.join(session, "artifacts", "doc", "draft.md")
    draft = open(draft_path, encoding="utf-8").read() if os.path.exists(draft_path) else ""
    qa_passed = re.search(r"^QA exited 0\.", prompt, re.MULTILINE) is not None
    good = qa_passed and draft.startswith("# ") and len(draft.split()) >= 150
    forced = (os.environ.get("CRUMB_EXAMPLE_FAIL_FIRST") == "1"
              and earlier_reviews(os.environ["CRUMB_TRANSCRIPT_PATH"]) == 0)
    if good and not forced:
        dims, body, extra = [5, 5, 4], "clear, on topic and checked by QA", {}
    else:
        dims = [1, 5 if qa_passed else 0, 1]
        body = "the draft needs another pass"
        extra = {"feedback": "state the main claim up front; one idea per paragraph",
                 "deviation": {"type": "Important"}}
    scores = {f"D{i + 1}": {"score": s, "source": "qa-check-effect" if i == 1 else "verifier-llm"}
              for i, s in enumerate(dims)}
    total = sum(score * weight for score, weight in zip(dims, WEIGHTS))
    scores.update(aggregate=total, verdict="PASS" if total >= 20 else "FAIL", **extra)
    print(f"{name}: {len(draft.split())} words, QA {'passed' if qa_passed else 'failed'}")
    event = {"kind": "judge.score", "body": body, "scores": scores}
    subprocess.run(["crumb", "event"], input=json.dumps(event), text=True, check=True,
                   stdout=subprocess.DEVNULL)
    print(json.dumps({"usage": {"input_tokens": 900, "output_tokens": 120,
                                "cache_read_tokens": 64, "reasoning_tokens": 48,
                                "cost_usd": 0.0, "model": "example-reviewer"}}))


if __name__ == "__main__":
    main()
