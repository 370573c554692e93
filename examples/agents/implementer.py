#!/usr/bin/env python3
"""Scripted implementer for pipelines/code.yaml (the `command` adapter's example agent).

Writes artifacts/code/solution.py and its unittest file, then reports a `build` event. With
CRUMB_EXAMPLE_FAIL_FIRST=1 the first attempt keeps a trailing '-' (a real bug the tests catch:
QA fails, the reviewer sends it back, the revision fixes it). Deterministic, standard library only.
"""
import hashlib
import json
import os
import re
import subprocess
import sys

SOLUTION = '''"""slugify: lower-case words joined by '-'."""
import re


def slugify(text):
    """'Hello,  World!' -> 'hello-world'."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower())
    return {strip}
'''

TESTS = '''import unittest

from solution import slugify


class SlugifyTest(unittest.TestCase):
    def test_words(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_runs_collapse(self):
        self.assertEqual(slugify("a  --  b!!c"), "a-b-c")

    def test_no_edge_dashes(self):
        self.assertEqual(slugify("  Hi there!  "), "hi-there")

    def test_empty(self):
        self.assertEqual(slugify(""), "")


if __name__ == "__main__":
    unittest.main()
'''


def main():
    prompt = sys.stdin.read()
    session = os.environ["CRUMB_SESSION_DIR"]
    revision = re.search(r"This is revision (\d+)", prompt) is not None
    buggy = os.environ.get("CRUMB_EXAMPLE_FAIL_FIRST") == "1" and not revision
    code = SOLUTION.format(strip="slug" if buggy else 'slug.strip("-")')
    folder = os.path.join(session, "artifacts", "code")
    os.makedirs(folder, exist_ok=True)
    artifacts = []
    for name, text in (("solution.py", code), ("test_solution.py", TESTS)):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as out:
            out.write(text)
        artifacts.append({"path": f"artifacts/code/{name}",
                          "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()})
    print(f"implementer: wrote solution.py and test_solution.py{' (revision)' if revision else ''}")
    event = {"kind": "build", "body": "slugify with 4 unit tests", "artifacts": artifacts}
    subprocess.run(["crumb", "event"], input=json.dumps(event), text=True, check=True,
                   stdout=subprocess.DEVNULL)
    print(json.dumps({"usage": {"input_tokens": 1500, "output_tokens": 400,
                                "reasoning_tokens": 64, "cost_usd": 0.0,
                                "model": "example-implementer"}}))


if __name__ == "__main__":
    main()
