"""End-to-end client for `crumb mcp`, on the official MCP Python SDK over stdio.

Usage: client.py CRUMB_BINARY PROJECT_DIR CRUMB_HOME. Prints one `ok <step>` line per step that
held; any failed expectation raises (exit 1) with what was seen instead.
"""

import asyncio
import json
import sys
import time

from mcp import Client, StdioServerParameters

CRUMB, PROJECT, HOME = sys.argv[1:4]
STEP_LIMIT = 90.0

READ_ONLY = {"status", "list", "validate", "check", "explain", "export", "doctor"}
ACTING = {"run", "say", "resume", "stop", "fork"}


def ok(step):
    print(f"ok {step}", flush=True)


def structured(result):
    assert not result.is_error, f"tool error: {result.content}"
    return result.structured_content


def error_text(result):
    assert result.is_error, f"expected a tool error, got {result.structured_content}"
    return " ".join(getattr(c, "text", "") for c in result.content)


async def transcript(client, session_id):
    page = await client.read_resource(f"crumb://sessions/{session_id}/transcript")
    return [json.loads(line) for line in json.loads(page.contents[0].text)["lines"]]


async def until(what, probe):
    deadline = time.monotonic() + STEP_LIMIT
    pause = 0.02
    while True:
        value = await probe()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.2)


async def main():
    server = StdioServerParameters(command=CRUMB, args=["mcp"], cwd=PROJECT, env={"CRUMB_HOME": HOME, "CRUMB_AMBIENT_ADAPTER": "mock", "CRUMB_STUDIO_PORT": "1"})
    async with Client(server, cache=None, read_timeout_seconds=STEP_LIMIT) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == READ_ONLY | ACTING, sorted(tools)
        for name, tool in tools.items():
            assert tool.input_schema.get("type") == "object", (name, tool.input_schema)
            assert tool.output_schema and tool.output_schema.get("type") == "object", (name, tool.output_schema)
            assert tool.annotations.read_only_hint == (name in READ_ONLY), (name, tool.annotations)
            # Claude Code refuses a tool whose schema holds a boolean sub-schema (`true`).
            for schema in (tool.input_schema, tool.output_schema):
                bad = [k for k, v in schema.get("properties", {}).items() if not isinstance(v, dict)]
                assert not bad, (name, bad)
        assert "pipeline" in tools["run"].input_schema["required"], tools["run"].input_schema
        assert tools["say"].input_schema["required"] == ["session", "line"], tools["say"].input_schema
        ok("tools and their schemas")

        casual = structured(await client.call_tool(
            "run", {"pipeline": "pipelines/casual-static.yaml", "pitch": "a snake game", "adapter": "mock"}))
        assert casual["folder"].endswith(casual["session_id"]), casual
        first = await until("the casual session's first events", lambda: transcript(client, casual["session_id"]))
        assert first[0]["kind"] == "session.start", first[0]
        listed = structured(await client.call_tool("list", {}))["result"]["sessions"]
        assert casual["session_id"] in [s["id"] for s in listed], listed
        ok("run a casual mock session")

        partial = structured(await client.call_tool("run", {
            "pipeline": "pipelines/casual-static.yaml", "pitch": "a puzzle game",
            "adapter": "mock", "mock_scenario": "partial"}))
        sid = partial["session_id"]

        async def awaiting():
            return any(e["kind"] == "session.awaiting" for e in await transcript(client, sid))

        await until("the partial session to wait for a person", awaiting)
        refused = error_text(await client.call_tool("say", {"session": sid, "line": "/frobnicate now"}))
        assert "frobnicate" in refused, refused
        ok("a refused line is a tool error")

        uris = [f"crumb://sessions/{sid}/summary", f"crumb://sessions/{sid}/transcript"]
        updates = []
        async with client.listen(resource_subscriptions=uris) as subscription:
            said = structured(await client.call_tool("say", {"session": sid, "line": "/approve"}))
            assert said["exit_code"] == 0, said
            async with asyncio.timeout(STEP_LIMIT):
                async for event in subscription:
                    updates.append(event.uri)
        assert set(updates) == set(uris), updates
        ok(f"change notifications until the session ended ({len(updates)})")
        summary = json.loads((await client.read_resource(uris[0])).contents[0].text)
        assert summary["state"]["done"]["outcome"] == "pass", summary["state"].get("done")
        events = await transcript(client, sid)
        assert events[-1]["kind"] == "session.end", events[-1]
        ok("say /approve to a PARTIAL session and see it end")

        status = structured(await client.call_tool("status", {"session": sid}))
        assert status["result"]["state"]["done"]["outcome"] == "pass", status
        ok("status")

        invalid = structured(await client.call_tool("validate", {"paths": ["pipelines/broken.yaml"]}))
        assert invalid["exit_code"] == 3, invalid
        diagnostics = invalid["result"]["files"][0]["diagnostics"]
        assert diagnostics and all(d["line"] >= 1 and d["col"] >= 1 for d in diagnostics), diagnostics
        ok("validate returns located diagnostics")

        for path in ["../outside.yaml", "/etc/passwd"]:
            refused = error_text(await client.call_tool("validate", {"paths": [path]}))
            assert "outside" in refused, refused
        refused = error_text(await client.call_tool("status", {"session": "/etc"}))
        assert "outside" in refused, refused
        ok("paths outside the project and home are refused")


asyncio.run(main())
