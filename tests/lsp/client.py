"""`crumb lsp` end to end, driven by pytest-lsp's LanguageClient (pygls) over stdio.

Usage: client.py CRUMB PROJECT REPO. Prints one `ok <step>` line per step that held; any failed
expectation raises (non-zero exit). PROJECT holds pipelines/casual.yaml with its templates;
REPO is the repository (its invalid fixtures and the include example are read in place).
"""

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, LanguageClient, client_capabilities

CRUMB, PROJECT, REPO = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
HELP = "\n= help: "
# Every wait is bounded: a server that never answers fails the step, it does not hang the test.
WAIT_S = 30


def make_client():
    client = LanguageClient(converter_factory=default_converter)
    client.published = []

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams):
        client.diagnostics[params.uri] = params.diagnostics
        client.published.append(params)

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    for method, func in features.items():
        client.feature(method)(func)
    return client


def uri(path):
    return Path(path).resolve().as_uri()


async def until(what, check):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while loop.time() < deadline:
        found = check()
        if found is not None and found is not False:
            return found
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def latest(client, doc, version):
    """The newest publish for `doc` at `version`, if it arrived."""
    for params in reversed(client.published):
        if params.uri == doc and params.version == version:
            return params
    return None


def ours(diagnostics):
    return [d for d in diagnostics if d.source == "crumb"]


class Docs:
    def __init__(self, client):
        self.client = client
        self.versions = {}

    async def open(self, path, text, language="yaml"):
        doc = uri(path)
        self.versions[doc] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=doc, language_id=language, version=1, text=text)
            )
        )
        return await self.wait(doc)

    async def change(self, path, changes):
        doc = uri(path)
        self.versions[doc] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=doc, version=self.versions[doc]),
                content_changes=changes,
            )
        )

    async def replace(self, path, text):
        await self.change(path, [types.TextDocumentContentChangeWholeDocument(text=text)])

    async def wait(self, doc):
        version = self.versions[doc]
        return await until(f"diagnostics of {doc} v{version}", lambda: latest(self.client, doc, version))

    def close(self, path):
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri(path)))
        )


def at(path, text, needle, offset=0):
    """The LSP position of `needle` (+ offset characters) in `text`."""
    index = text.index(needle) + offset
    line = text.count("\n", 0, index)
    start = text.rfind("\n", 0, index) + 1
    character = len(text[start:index].encode("utf-16-le")) // 2
    return types.TextDocumentPositionParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        position=types.Position(line=line, character=character),
    )


def validate_json(*paths):
    run = subprocess.run(
        [CRUMB, "validate", "--format", "json", *map(str, paths)],
        capture_output=True, text=True, timeout=120,
    )
    return json.loads(run.stdout)


def utf16(line_text, chars):
    return len(line_text[:chars].encode("utf-16-le")) // 2


def expected_of(report_file):
    """validate's diagnostics of one file as (file, code, severity, message, hint, range)."""
    out = []
    for d in report_file["diagnostics"]:
        file = str(Path(d["file"]).resolve())
        rng = None
        if "line" in d:
            try:
                text = Path(file).read_bytes().decode("utf-8", errors="replace")
            except OSError:
                text = ""
            lines = text.split("\n")
            line_text = lines[d["line"] - 1] if d["line"] - 1 < len(lines) else ""
            start = utf16(line_text, d["col"] - 1)
            rng = (d["line"] - 1, start)
        out.append((file, d["code"], d["severity"], d["message"], d.get("hint"), rng))
    return out


def actual_of(client, files):
    out = []
    for file in files:
        for d in ours(client.diagnostics.get(uri(file), [])):
            message, _, hint = d.message.partition(HELP)
            severity = {1: "error", 2: "warning"}[int(d.severity)]
            has_span = not (d.range.start.line == 0 and d.range.start.character == 0 and d.range.end == d.range.start)
            rng = (d.range.start.line, d.range.start.character) if has_span else None
            out.append((str(Path(file).resolve()), d.code, severity, message, hint or None, rng))
    return out


async def hover_text(client, position):
    result = await client.text_document_hover_async(
        types.HoverParams(text_document=position.text_document, position=position.position)
    )
    return result.contents.value if result else ""


async def main():
    client = make_client()
    await client.start_io(CRUMB, "lsp")
    result = await client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=uri(PROJECT))
    )
    assert result.server_info.name == "crumb", result
    assert result.capabilities.rename_provider, result.capabilities
    print("ok initialize", flush=True)
    docs = Docs(client)

    # Every invalid fixture: what the server publishes equals `crumb validate --format json`.
    invalid = (REPO / "tests/pipelines/invalid").resolve()
    report = validate_json(invalid)
    compared = 0
    for entry in report["files"]:
        path = Path(entry["file"]).resolve()
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            # An editor cannot hand over bytes that are not UTF-8 as text; the server reads
            # such a file from the disk when the buffer is what the disk decodes to.
            text = raw.decode("utf-8", errors="replace")
        expected = expected_of(entry)
        files = sorted({path} | {Path(e[0]) for e in expected})
        # On open, then on an unsaved change back to the same text from an emptied buffer.
        await docs.open(path, text)
        actual = actual_of(client, files)
        assert sorted(actual, key=repr) == sorted(expected, key=repr), (
            f"{path.name} on open:\n  lsp:      {actual}\n  validate: {expected}"
        )
        await docs.replace(path, "")
        await docs.wait(uri(path))
        await docs.replace(path, text)
        await docs.wait(uri(path))
        actual = actual_of(client, files)
        assert sorted(actual, key=repr) == sorted(expected, key=repr), (
            f"{path.name} on a change:\n  lsp:      {actual}\n  validate: {expected}"
        )
        docs.close(path)
        compared += 1
    assert compared >= 50, compared
    print(f"ok diagnostics equal crumb validate for {compared} invalid fixtures, on open and on a change", flush=True)

    # An unsaved change breaks the pipeline, validate agrees on the same text, the fix clears it.
    casual = PROJECT / "pipelines/casual.yaml"
    text = casual.read_text()
    published = await docs.open(casual, text)
    assert len(ours(published.diagnostics)) == 0, published.diagnostics
    broken = text.replace("- { on: spec, spawn: builder }", "- { on: spec, spawn: bilder }")
    await docs.replace(casual, broken)
    published = await docs.wait(uri(casual))
    scratch = casual.with_name("scratch-copy.yaml")
    scratch.write_text(broken)
    try:
        expected = [e[1:] for e in expected_of(validate_json(scratch)["files"][0])]
    finally:
        scratch.unlink()
    actual = [a[1:] for a in actual_of(client, [casual])]
    assert actual == expected and actual[0][0] == "crumb::unknown-role", (actual, expected)
    unknown = ours(published.diagnostics)[0]
    assert unknown.code_description.href == "crumb-explain:crumb::unknown-role", unknown
    assert unknown.related_information, unknown
    print("ok an unsaved change is diagnosed as crumb validate would", flush=True)

    # Hover on the diagnostic's code: its `crumb explain` text.
    shown = await hover_text(client, at(casual, broken, "bilder"))
    assert "crumb::unknown-role" in shown and "How to fix" in shown, shown
    print("ok hover on a code", flush=True)

    # The "did you mean" fix, applied, clears it.
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri(casual)),
            range=unknown.range,
            context=types.CodeActionContext(diagnostics=[unknown]),
        )
    )
    fix = next(a for a in actions if "builder" in a.title)
    edits = fix.edit.changes[uri(casual)]
    await docs.change(casual, [types.TextDocumentContentChangePartial(range=e.range, text=e.new_text) for e in edits])
    published = await docs.wait(uri(casual))
    assert len(ours(published.diagnostics)) == 0, published.diagnostics
    print("ok a code action applied fixes it", flush=True)

    # Hover on a key, a role and a kind.
    shown = await hover_text(client, at(casual, text, "produces: [spec]"))
    assert "**produces**" in shown, shown
    shown = await hover_text(client, at(casual, text, "spawn: builder", 8))
    assert "role `builder`" in shown and "template" in shown and "spawned by" in shown, shown
    shown = await hover_text(client, at(casual, text, "on: spec,", 5))
    assert "kind `spec`" in shown and "produced by: planner-lead" in shown, shown
    print("ok hover on a key, a role and a kind", flush=True)

    # Completion: a role in `spawn:`, a kind in `on:`.
    typing = text.replace("  - { on: build, run: qa }", "  - { on: build, run: qa }\n  - { on: spec, spawn:  }\n  - { on:  }")
    await docs.replace(casual, typing)
    await docs.wait(uri(casual))

    async def labels(position):
        result = await client.text_document_completion_async(
            types.CompletionParams(text_document=position.text_document, position=position.position)
        )
        items = result.items if hasattr(result, "items") else result
        return {item.label for item in items}

    roles = await labels(at(casual, typing, "spawn:  }", 7))
    assert {"builder", "verifier", "planner-lead"} <= roles, roles
    kinds = await labels(at(casual, typing, "- { on:  }", 8))
    assert {"spec", "build", "goal", "verdict"} <= kinds, kinds
    await docs.replace(casual, text)
    await docs.wait(uri(casual))
    print("ok completion of a role in spawn: and a kind in on:", flush=True)

    # Go to definition: a role's template → the file.
    where = at(casual, text, "../templates/builder.md.j2", 3)
    location = await client.text_document_definition_async(
        types.DefinitionParams(text_document=where.text_document, position=where.position)
    )
    location = location[0] if isinstance(location, list) else location
    assert location.uri == uri(PROJECT / "templates/builder.md.j2"), location
    print("ok go to definition of a template", flush=True)

    # A template edit re-diagnoses its pipeline; the template variable is completed.
    template = PROJECT / "templates/builder.md.j2"
    template_text = template.read_text()
    before = len(client.published)
    await docs.open(template, template_text, "jinja")
    await docs.replace(template, template_text + "\n{{ feedback.txt }}\n")
    found = await until(
        "the template's error, from its pipeline's compile",
        lambda: next(
            (p for p in client.published[before:] if p.uri == uri(template)
             and any(d.code == "crumb::unknown-template-variable" for d in p.diagnostics)),
            None,
        ),
    )
    assert found
    await until("the pipeline re-diagnosed", lambda: any(p.uri == uri(casual) for p in client.published[before:]))
    fields = await labels(at(template, template_text + "\n{{ feedback.txt }}\n", "feedback.txt", 9))
    assert {"text", "severity", "suggested_change"} <= fields, fields
    shown = await hover_text(client, at(template, template_text + "\n{{ feedback.txt }}\n", "feedback.txt", 2))
    assert "`feedback`" in shown and "suggested_change" in shown, shown
    await docs.replace(template, template_text)
    await until(
        "the template's error cleared",
        lambda: len(client.diagnostics.get(uri(template), [None])) == 0 or None,
    )
    docs.close(template)
    print("ok a template edit re-diagnoses its pipeline", flush=True)
    print("ok completion of a template variable, and its hover", flush=True)

    # Rename a role across a pipeline and the fragment it includes.
    include = (REPO / "tests/pipelines/valid/inputs-and-include.yaml").resolve()
    fragment = include.parent / "fragments/writer.yaml"
    include_text = include.read_text()
    await docs.open(include, include_text)
    where = at(include, include_text, "spawn: writer", 8)
    edit = await client.text_document_rename_async(
        types.RenameParams(new_name="author", text_document=where.text_document, position=where.position)
    )
    changed = {k: len(v) for k, v in edit.changes.items()}
    assert changed == {uri(include): 1, uri(fragment): 1}, changed
    references = await client.text_document_references_async(
        types.ReferenceParams(
            context=types.ReferenceContext(include_declaration=True),
            text_document=where.text_document,
            position=where.position,
        )
    )
    assert sorted(r.uri for r in references) == sorted([uri(include), uri(fragment)]), references
    docs.close(include)
    print("ok rename of a role across two files, and its references", flush=True)

    # Symbols, the graph lens and its command.
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri(casual)))
    )
    names = [s.name for s in symbols]
    assert "builder" in names and any(n.startswith("route 1: on goal") for n in names), names
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri(casual)))
    )
    command = lenses[0].command
    graph = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert "flowchart" in graph or "graph" in graph, graph
    print("ok symbols and the graph lens", flush=True)

    # Bad input never kills the server: each is answered or ignored, then a hover still works.
    async def alive():
        shown = await hover_text(client, at(casual, text, "spawn: builder", 8))
        assert "role `builder`" in shown, shown

    scratch_dir = PROJECT / "scratch"
    scratch_dir.mkdir(exist_ok=True)
    big = scratch_dir / "big.yaml"
    published = await docs.open(big, "name: big\n" + "# filler\n" * (10 * 1024 * 1024 // 9))
    assert any(d.code == "crumb::file-too-large" or "large" in d.message for d in published.diagnostics), published
    await alive()
    docs.close(big)
    print("ok a 10 MB buffer", flush=True)

    far = types.Position(line=10**6, character=10**6)
    surrogate = types.Position(line=0, character=10**9)
    await client.text_document_hover_async(types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri(casual)), position=far))
    await client.text_document_completion_async(types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri(casual)), position=surrogate))
    await docs.change(casual, [types.TextDocumentContentChangePartial(range=types.Range(start=far, end=types.Position(line=0, character=0)), text="")])
    published = await docs.wait(uri(casual))
    assert len(ours(published.diagnostics)) == 0, published.diagnostics
    await alive()
    print("ok invalid UTF-16 offsets", flush=True)

    bomb = scratch_dir / "bomb.yaml"
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [*a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}]" for i in range(1, 10)]
    published = await docs.open(bomb, "version: 1\nname: bomb\n" + "\n".join(rows) + "\n")
    assert ours(published.diagnostics), published
    await alive()
    print("ok a YAML bomb", flush=True)

    loop_template = PROJECT / "templates/builder.md.j2"
    await docs.open(loop_template, '{% include "builder.md.j2" %}\n', "jinja")
    await until(
        "the include cycle reported on the template",
        lambda: client.diagnostics.get(uri(loop_template)) or None,
    )
    await alive()
    docs.close(loop_template)
    print("ok a template include cycle", flush=True)

    gone = scratch_dir / "gone.yaml"
    gone.write_text("version: 1\nname: gone\n")
    await docs.open(gone, gone.read_text())
    gone.unlink()
    docs.close(gone)
    shown = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri(gone)), position=types.Position(line=0, character=0))
    )
    assert shown is None, shown
    await alive()
    print("ok a request for a deleted file", flush=True)

    await client.shutdown_session()
    print("ok shutdown", flush=True)


asyncio.run(asyncio.wait_for(main(), timeout=240))
