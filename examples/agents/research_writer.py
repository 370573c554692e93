#!/usr/bin/env python3
"""Scripted writer for pipelines/research.yaml (the `command` adapter's example agent).

Counts the `research.note` events of the transcript: with fewer than CRUMB_EXAMPLE_NOTES
(default 2) it asks for more with a `research.request`; otherwise it writes
artifacts/doc/report.md citing every note's source and emits a `draft`. Deterministic, standard
library only.
"""
import hashlib
import json
import os
import re
import subprocess
import sys


def notes(transcript):
    """The `research.note` events of the transcript, in order."""
    found = []
    with open(transcript, encoding="utf-8") as lines:
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("kind") == "research.note":
                found.append(event)
    return found


def emit(event):
    subprocess.run(["crumb", "event"], input=json.dumps(event), text=True, check=True,
                   stdout=subprocess.DEVNULL)


def main():
    prompt = sys.stdin.read()
    session = os.environ["CRUMB_SESSION_DIR"]
    match = re.search(r"^> (.+)$", prompt, re.MULTILINE)
    question = match.group(1).strip() if match else "the question"
    found = notes(os.environ["CRUMB_TRANSCRIPT_PATH"])
    wanted = int(os.environ.get("CRUMB_EXAMPLE_NOTES", "2"))
    if len(found) < wanted:
        emit({"kind": "research.request",
              "body": f"{len(found)} note(s) so far; need evidence on where the answer breaks down"})
        print(f"writer: asked for more research ({len(found)} of {wanted} notes)")
    else:
        lines = [f"# {question[:1].upper() + question[1:]}", ""]
        lines += [f"- {n.get('body', '')}" for n in found]
        if "Feedback on the previous attempt" in prompt:
            lines += ["", "This revision states the answer first and ties each claim to its source."]
        lines += ["", "## Sources", ""]
        lines += [f"- {n.get('data', {}).get('source', '?')}" for n in found]
        text = "\n".join(lines) + "\n"
        path = os.path.join(session, "artifacts", "doc", "report.md")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        emit({"kind": "draft", "body": f"report on {question} from {len(found)} notes",
              "artifacts": [{"path": "artifacts/doc/report.md", "sha256": digest}]})
        print(f"writer: wrote artifacts/doc/report.md from {len(found)} notes")
    print(json.dumps({"usage": {"input_tokens": 1100, "output_tokens": 300, "cost_usd": 0.0,
                                "model": "example-writer"}}))


if __name__ == "__main__":
    main()
