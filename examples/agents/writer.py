#!/usr/bin/env python3
"""Scripted writer for pipelines/doc-review.yaml (the `command` adapter's example agent).

Reads its prompt on stdin (also at $CRUMB_PROMPT_PATH), writes artifacts/doc/draft.md in the
session folder, reports back with `crumb event` as templates/_event_protocol.md.j2 says, and
prints one usage line. Deterministic and standard library only.
"""
import hashlib
import json
import os
import re
import subprocess
import sys

PARAGRAPHS = [
    "Good work of this kind rests on a few plain ideas, and {topic} is no exception. "
    "The first is that the result depends on steps that cannot be rushed: each one prepares "
    "the ground for the next, and skipping one shows up later as a flaw that is hard to fix.",
    "The second idea is patience with feedback. Small trials, read carefully, say more than a "
    "single large attempt. Each trial changes one thing, keeps a note of what happened, and "
    "leaves the rest alone, so that cause and effect stay easy to see.",
    "The third idea is that time itself does work. Slow processes build structure and flavour "
    "that fast ones cannot, because they give many small changes the chance to add up. "
    "Waiting is not idleness; it is part of the method.",
    "In practice this means planning ahead, starting early, and checking progress at fixed "
    "points instead of guessing. People who learn to read the signs need fewer rules, "
    "because they can see when something is ready and when it needs longer.",
]


def topic_of(prompt):
    """The goal: the first quoted line (`> …`) of the prompt."""
    match = re.search(r"^> (.+)$", prompt, re.MULTILINE)
    return match.group(1).strip() if match else "the topic"


def main():
    prompt = sys.stdin.read()
    session = os.environ["CRUMB_SESSION_DIR"]
    topic = topic_of(prompt)
    revision = re.search(r"This is revision (\d+)", prompt)
    body = [p.format(topic=topic) for p in PARAGRAPHS]
    if revision:
        body.append(
            "This revision answers the review: it states the main claim up front and keeps "
            "each paragraph to one idea, so the argument is easier to follow."
        )
    text = "# On {}\n\n{}\n".format(topic[:1].upper() + topic[1:], "\n\n".join(body))
    path = os.path.join(session, "artifacts", "doc", "draft.md")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    print(f"writer: wrote {len(text.split())} words to artifacts/doc/draft.md")
    event = {
        "kind": "build",
        "body": f"draft on {topic} ({len(text.split())} words)",
        "artifacts": [{"path": "artifacts/doc/draft.md", "sha256": digest}],
    }
    subprocess.run(["crumb", "event"], input=json.dumps(event), text=True, check=True,
                   stdout=subprocess.DEVNULL)
    print(json.dumps({"usage": {"input_tokens": 1200, "output_tokens": len(text) // 4,
                                "reasoning_tokens": 32, "cost_usd": 0.0,
                                "model": "example-writer"}}))


if __name__ == "__main__":
    main()
