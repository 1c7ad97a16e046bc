"""sandboxd-mcp driven by a real MCP client nobody here wrote: the official TypeScript SDK
(@modelcontextprotocol/sdk, pinned in tests/mcp/package-lock.json, installed by scripts/test.sh
with npm ci), spawning the server over stdio (tests/mcp/mcp_client.mjs)."""
import json
import os
import shutil
import subprocess

from harness import DaemonTest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MCPDIR = os.path.join(ROOT, "tests", "mcp")


class McpServer(DaemonTest):
    # The scenarios need commands that ask (`rm -r /tmp/...`, delete.recursive) in the default
    # sandbox whatever its isolation: an isolated one asks too with ask_isolated = ask.
    config = "[policy]\nask_isolated = ask\n"

    @classmethod
    def setUpClass(cls):
        if not os.path.isdir(os.path.join(MCPDIR, "node_modules", "@modelcontextprotocol")):
            raise AssertionError("the MCP SDK is not installed: run 'npm ci --prefix tests/mcp' "
                                 "(scripts/test.sh does)")
        if not shutil.which("node"):
            raise AssertionError("node is not installed (scripts/install-deps.sh --test)")
        super().setUpClass()

    def scenario(self, name):
        env = dict(os.environ, SANDBOXD_SOCKET=self.daemon.socket,
                   PYTHONPATH=os.path.join(ROOT, "client", "python"),
                   SANDBOXD_MCP_CMD=json.dumps(["/usr/bin/python3", "-m", "sandboxd.mcp"]))
        p = subprocess.run(["node", os.path.join(MCPDIR, "mcp_client.mjs"), name], env=env,
                           capture_output=True, text=True, timeout=180)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_tools(self):
        o = self.scenario("tools")
        self.assertEqual(o["server"]["name"], "sandboxd")
        names = {t["name"] for t in o["tools"]}
        self.assertEqual(names, {"run", "process_output", "process_write", "process_kill",
                                 "process_list", "file_read", "file_write", "sandbox_create",
                                 "sandbox_destroy", "sandbox_list"})
        self.assertFalse(o["run"]["isError"])
        self.assertEqual(o["run"]["data"]["exit_code"], 3)
        self.assertIn("hello\noops\n", o["run"]["text"])
        self.assertIn("/tmp kept", o["state2"]["text"], "shell state persists between runs")
        self.assertEqual(o["bgOutput"], "bg-out\nbg-done\n")
        self.assertEqual(o["read"]["text"], "line\n")
        self.assertTrue(o["denied"]["isError"])
        self.assertIn("floor.rm-root", o["denied"]["text"])
        self.assertTrue(o["askNoElicit"]["isError"])
        self.assertIn("delete.recursive", o["askNoElicit"]["text"])
        self.assertIn("elicitation", o["askNoElicit"]["text"])
        self.assertIn("mcp-box", o["listed"]["text"])
        self.assertIn("destroyed", o["destroyed"]["text"])
        self.assertTrue(o["badTool"]["isError"])

    def test_approval_through_elicitation(self):
        o = self.scenario("elicit")
        self.assertEqual(len(o["asked"]), 1)
        self.assertIn("rm -r /tmp/sandboxd-mcp-nothing", o["asked"][0]["message"])
        enum = o["asked"][0]["requestedSchema"]["properties"]["decision"]["enum"]
        self.assertIn("once", enum)
        self.assertIn("deny", enum)
        self.assertFalse(o["approved"]["isError"], o["approved"])
        self.assertEqual(o["approved"]["data"]["exit_code"], 1)  # rm ran: nothing to remove
        self.assertEqual(o["askedDecline"], 1)
        self.assertTrue(o["declined"]["isError"])

    def test_cancel_kills_the_command(self):
        o = self.scenario("cancel")
        self.assertTrue(o["seenRunning"])
        self.assertIn("abort", o["call"]["aborted"].lower())
        self.assertTrue(o["killed"])
