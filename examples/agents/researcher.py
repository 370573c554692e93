#!/usr/bin/env python3
"""Scripted researcher for pipelines/research.yaml (the `command` adapter's example agent).

Writes one `research.note` a turn (the pipeline's own kind) with a made-up but stable source in
`data.source`, as the pipeline's schema for the kind requires. Deterministic, standard library
only.
"""
import json
import re
import subprocess
import sys

ANGLES = [
    ("what the question turns on", "Survey of the field, chapter 1"),
    ("the strongest evidence for the usual answer", "Longitudinal study, 2019"),
    ("where the usual answer breaks down", "Replication report, 2022"),
    ("what practitioners actually do", "Practitioners' handbook, 3rd edition"),
    ("the open questions", "Review article, 2024"),
]


def main():
    prompt = sys.stdin.read()
    match = re.search(r"^> (.+)$", prompt, re.MULTILINE)
    question = match.group(1).strip() if match else "the question"
    written = re.search(r"You wrote (\d+) note", prompt)
    n = int(written.group(1)) if written else 0
    angle, source = ANGLES[n % len(ANGLES)]
    event = {
        "kind": "research.note",
        "body": f"On {question}: {angle}, as {source} sets out.",
        "data": {"source": source, "claim": angle},
    }
    subprocess.run(["crumb", "event"], input=json.dumps(event), text=True, check=True,
                   stdout=subprocess.DEVNULL)
    print(f"researcher: note {n + 1} from {source}")
    print(json.dumps({"usage": {"input_tokens": 700, "output_tokens": 90, "cost_usd": 0.0,
                                "model": "example-researcher"}}))


if __name__ == "__main__":
    main()
