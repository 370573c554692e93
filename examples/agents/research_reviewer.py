#!/usr/bin/env python3
"""Scripted reviewer for pipelines/research.yaml (the `command` adapter's example agent).

Scores the report on research.yaml's own rubric (coverage ×2, sourcing ×2, clarity; out of 25),
under `scores.dims`: a pass when the report has a title and a `## Sources` list with two or more
entries. With CRUMB_EXAMPLE_FAIL_FIRST=1, `reviewer-b` fails the first draft on purpose while
`reviewer-a` passes it, so the join (majority of two) sends it back. argv[1] names the reviewer.
Deterministic, standard library only.
"""
import json
import os
import subprocess
import sys

WEIGHTS = {"coverage": 2, "sourcing": 2, "clarity": 1}


def drafts(transcript):
    """How many `draft` events the transcript holds."""
    with open(transcript, encoding="utf-8") as lines:
        return sum(1 for line in lines if '"kind":"draft"' in line.replace(" ", ""))


def main():
    sys.stdin.read()
    name = sys.argv[1] if len(sys.argv) > 1 else "reviewer"
    path = os.path.join(os.environ["CRUMB_SESSION_DIR"], "artifacts", "doc", "report.md")
    report = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    sources = report.split("## Sources", 1)[1] if "## Sources" in report else ""
    cited = sum(1 for line in sources.splitlines() if line.startswith("- "))
    good = report.startswith("# ") and cited >= 2
    forced = (name == "reviewer-b" and os.environ.get("CRUMB_EXAMPLE_FAIL_FIRST") == "1"
              and drafts(os.environ["CRUMB_TRANSCRIPT_PATH"]) == 1)
    if good and not forced:
        dims, body, extra = {"coverage": 5, "sourcing": 4, "clarity": 4}, "answers the question from its sources", {}
    else:
        dims = {"coverage": 2, "sourcing": 3 if cited else 0, "clarity": 3}
        body = "the report does not yet answer the question"
        extra = {"feedback": "state the answer first and tie each claim to a source",
                 "deviation": {"type": "Important"}}
    total = sum(score * WEIGHTS[dim] for dim, score in dims.items())
    scores = {"dims": {dim: {"score": s, "source": "verifier-llm"} for dim, s in dims.items()},
              "aggregate": total, "verdict": "PASS" if total >= 20 else "FAIL", **extra}
    print(f"{name}: {cited} source(s) cited, {total}/25")
    subprocess.run(["crumb", "event"], input=json.dumps({"kind": "judge.score", "body": body,
                                                         "scores": scores}),
                   text=True, check=True, stdout=subprocess.DEVNULL)
    print(json.dumps({"usage": {"input_tokens": 900, "output_tokens": 120, "cost_usd": 0.0,
                                "model": "example-reviewer"}}))


if __name__ == "__main__":
    main()
