"""Self-tests of the Modal fakes (tests/fakes/modal/): they must speak the wire formats the
backend is written against (gRPC over h2c with Modal's field numbers and auth headers; the
gateway's REST API), or the backend's tests would prove nothing. Uses grpcio's own client."""
import base64
import json
import os
import sys
import time
import unittest
import urllib.error
import urllib.request

import grpc

from modal_fakes import FAKES, FakeGateway, FakeModal

sys.path.insert(0, FAKES)
import fakelib  # noqa: E402

api, tcr = fakelib.load_protos()


def unary(ch, service, name, req, resp_cls, md=()):
    f = ch.unary_unary("/%s/%s" % (service, name), request_serializer=req.SerializeToString,
                       response_deserializer=resp_cls.FromString)
    return f(req, metadata=list(md), timeout=20)


def stream(ch, service, name, req, resp_cls, md=()):
    f = ch.unary_stream("/%s/%s" % (service, name), request_serializer=req.SerializeToString,
                        response_deserializer=resp_cls.FromString)
    return f(req, metadata=list(md), timeout=20)


MC = "modal.client.ModalClient"
TR = "modal.task_command_router.TaskCommandRouter"


class FakeModalSelfTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeModal()
        cls.ch = grpc.insecure_channel(cls.fake.url[len("http://"):])
        cls.creds = [("x-modal-client-type", "7"), ("x-modal-client-version", "1.0.0"),
                     ("x-modal-token-id", cls.fake.token_id),
                     ("x-modal-token-secret", cls.fake.token_secret)]

    @classmethod
    def tearDownClass(cls):
        cls.ch.close()
        cls.fake.stop()

    def call(self, name, req, resp, token=True):
        md = list(self.creds)
        if token:
            md.append(("x-modal-auth-token", self.token()))
        return unary(self.ch, MC, name, req, resp, md)

    def token(self):
        return unary(self.ch, MC, "AuthTokenGet", api.AuthTokenGetRequest(),
                     api.AuthTokenGetResponse, self.creds).token

    def sandbox(self):
        app = self.call("AppGetOrCreate", api.AppGetOrCreateRequest(
            app_name="selftest", object_creation_type=api.OBJECT_CREATION_TYPE_CREATE_IF_MISSING),
            api.AppGetOrCreateResponse).app_id
        img = self.call("ImageGetOrCreate", api.ImageGetOrCreateRequest(
            app_id=app, image=api.Image(dockerfile_commands=["FROM debian:bookworm-slim"])),
            api.ImageGetOrCreateResponse)
        self.assertEqual(img.result.status, api.GenericResult.GENERIC_STATUS_SUCCESS)
        sid = self.call("SandboxCreate", api.SandboxCreateRequest(
            app_id=app, definition=api.Sandbox(image_id=img.image_id, timeout_secs=60),
            tags=[api.SandboxTag(tag_name="sandboxd", tag_value="1")]),
            api.SandboxCreateResponse).sandbox_id
        task = self.call("SandboxGetTaskId", api.SandboxGetTaskIdRequest(sandbox_id=sid),
                         api.SandboxGetTaskIdResponse).task_id
        acc = self.call("TaskGetCommandRouterAccess",
                        api.TaskGetCommandRouterAccessRequest(task_id=task),
                        api.TaskGetCommandRouterAccessResponse)
        return sid, task, acc

    def router(self, acc):
        return grpc.insecure_channel(acc.url[len("http://"):]), [("authorization",
                                                                   "Bearer " + acc.jwt)]

    def test_auth_headers_are_required(self):
        with self.assertRaises(grpc.RpcError) as e:
            unary(self.ch, MC, "AuthTokenGet", api.AuthTokenGetRequest(),
                  api.AuthTokenGetResponse, self.creds[:3] + [("x-modal-token-secret", "wrong")])
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
        with self.assertRaises(grpc.RpcError) as e:
            self.call("AppGetOrCreate", api.AppGetOrCreateRequest(app_name="x"),
                      api.AppGetOrCreateResponse, token=False)
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
        payload = self.token().split(".")[1]
        exp = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"]
        self.assertGreater(exp, time.time() + 60)

    def test_exec_stdio_stdin_wait_and_resume(self):
        sid, task, acc = self.sandbox()
        rch, md = self.router(acc)
        unary(rch, TR, "TaskExecStart", tcr.TaskExecStartRequest(
            task_id=task, exec_id="e1", command_args=["sh", "-c", "cat; echo err >&2; exit 3"],
            stdout_config=tcr.TASK_EXEC_STDOUT_CONFIG_PIPE,
            stderr_config=tcr.TASK_EXEC_STDERR_CONFIG_PIPE, env={"A": "1"}),
            tcr.TaskExecStartResponse, md)
        for off, data, eof in ((0, b"hello ", False), (3, b"lo world", False), (11, b"", True)):
            unary(rch, TR, "TaskExecStdinWrite", tcr.TaskExecStdinWriteRequest(
                task_id=task, exec_id="e1", offset=off, data=data, eof=eof),
                tcr.TaskExecStdinWriteResponse, md)
        w = unary(rch, TR, "TaskExecWait", tcr.TaskExecWaitRequest(task_id=task, exec_id="e1"),
                  tcr.TaskExecWaitResponse, md)
        self.assertEqual((w.WhichOneof("exit_status"), w.code), ("code", 3))
        out = b"".join(r.data for r in stream(rch, TR, "TaskExecStdioRead",
                       tcr.TaskExecStdioReadRequest(task_id=task, exec_id="e1", offset=6),
                       tcr.TaskExecStdioReadResponse, md))
        self.assertEqual(out, b"world")
        err = b"".join(r.data for r in stream(rch, TR, "TaskExecStdioRead",
                       tcr.TaskExecStdioReadRequest(
                           task_id=task, exec_id="e1",
                           file_descriptor=tcr.TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR),
                       tcr.TaskExecStdioReadResponse, md))
        self.assertEqual(err, b"err\n")
        rch.close()

    def test_stream_cut_and_token_expiry_injections(self):
        sid, task, acc = self.sandbox()
        rch, md = self.router(acc)
        unary(rch, TR, "TaskExecStart", tcr.TaskExecStartRequest(
            task_id=task, exec_id="e2", command_args=["sh", "-c", "seq 1 2000"],
            stdout_config=tcr.TASK_EXEC_STDOUT_CONFIG_PIPE), tcr.TaskExecStartResponse, md)
        self.fake.control(cut_stream_after=100)
        got = b""
        with self.assertRaises(grpc.RpcError) as e:
            for r in stream(rch, TR, "TaskExecStdioRead", tcr.TaskExecStdioReadRequest(
                    task_id=task, exec_id="e2"), tcr.TaskExecStdioReadResponse, md):
                got += r.data
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(len(got), 100)
        for r in stream(rch, TR, "TaskExecStdioRead", tcr.TaskExecStdioReadRequest(
                task_id=task, exec_id="e2", offset=len(got)), tcr.TaskExecStdioReadResponse, md):
            got += r.data
        self.assertEqual(got, "".join("%d\n" % i for i in range(1, 2001)).encode())
        self.fake.control(expire_tokens=1)
        with self.assertRaises(grpc.RpcError) as e:
            unary(rch, TR, "TaskExecWait", tcr.TaskExecWaitRequest(task_id=task, exec_id="e2"),
                  tcr.TaskExecWaitResponse, md)
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
        rch.close()
        t = self.call("SandboxTerminate", api.SandboxTerminateRequest(sandbox_id=sid),
                      api.SandboxTerminateResponse)
        self.assertFalse(t.HasField("existing_result"))
        w = self.call("SandboxWait", api.SandboxWaitRequest(sandbox_id=sid, timeout=1),
                      api.SandboxWaitResponse)
        self.assertEqual(w.result.status, api.GenericResult.GENERIC_STATUS_TERMINATED)

    def test_list_by_tags_pages(self):
        ids = {self.sandbox()[0] for _ in range(3)}
        app = self.call("AppGetOrCreate", api.AppGetOrCreateRequest(
            app_name="selftest", object_creation_type=api.OBJECT_CREATION_TYPE_CREATE_IF_MISSING),
            api.AppGetOrCreateResponse).app_id
        seen, before = set(), 0.0
        while True:
            page = self.call("SandboxList", api.SandboxListRequest(
                app_id=app, before_timestamp=before,
                tags=[api.SandboxTag(tag_name="sandboxd", tag_value="1")]),
                api.SandboxListResponse).sandboxes
            if not page:
                break
            self.assertLessEqual(len(page), 2)
            seen |= {s.id for s in page}
            before = min(s.created_at for s in page)
        self.assertTrue(ids <= seen)


class FakeGatewaySelfTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gw = FakeGateway()

    @classmethod
    def tearDownClass(cls):
        cls.gw.stop()

    def req(self, method, path, body=None, token=None, headers=None):
        h = {"Authorization": "Bearer " + (token or self.gw.token),
             "Content-Type": "application/json"}
        h.update(headers or {})
        r = urllib.request.Request(self.gw.url + path, method=method, headers=h,
                                   data=json.dumps(body).encode() if body is not None else None)
        try:
            with urllib.request.urlopen(r, timeout=20) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def test_token_health_and_idempotent_create(self):
        self.assertEqual(self.req("GET", "/v1/health", token="nope")[0], 401)
        self.assertEqual(self.req("GET", "/v1/health"), (200, {"status": "ok"}))
        self.gw.control(health="error")
        self.assertEqual(self.req("GET", "/v1/health")[0], 503)
        self.gw.control(health="ok")
        body = {"image": "debian", "cpu": 1, "memoryMiB": 512, "timeoutMs": 60000}
        self.assertEqual(self.req("POST", "/v1/sandboxes", body)[0], 400)  # no key
        a = self.req("POST", "/v1/sandboxes", body, headers={"x-idempotency-key": "k1"})
        b = self.req("POST", "/v1/sandboxes", body, headers={"x-idempotency-key": "k1"})
        self.assertEqual(a, b)
        self.assertEqual(a[1]["status"], "running")

    def test_exec_poll_cancel_terminate(self):
        _, sb = self.req("POST", "/v1/sandboxes", {"image": "x"},
                         headers={"x-idempotency-key": "k2"})
        sid = sb["id"]
        code, st = self.req("POST", "/v1/sandboxes/%s/execs" % sid,
                            {"execId": "x1", "command": "cat; echo e >&2; exit 4",
                             "stdinData": "in\n", "timeoutMs": 10000})
        self.assertEqual((code, st["execId"]), (200, "x1"))
        while st["status"] == "running":
            code, st = self.req("GET", "/v1/sandboxes/%s/execs/x1" % sid)
        self.assertEqual((st["status"], st["returncode"], st["output"]), ("failed", 4, "in\ne\n"))
        self.req("POST", "/v1/sandboxes/%s/execs" % sid, {"execId": "x2", "command": "sleep 30"})
        code, st = self.req("POST", "/v1/sandboxes/%s/execs/x2/cancel" % sid, {})
        self.assertEqual(st["status"], "cancelled")
        self.assertEqual(self.req("GET", "/v1/sandboxes/%s/execs/nope" % sid)[0], 404)
        self.assertEqual(self.req("POST", "/v1/sandboxes/%s/terminate" % sid,
                                  {"snapshotBeforeTerminate": False})[1]["status"], "terminated")
        self.assertEqual(self.req("POST", "/v1/sandboxes/%s/execs" % sid,
                                  {"execId": "x3", "command": "true"})[0], 409)


if __name__ == "__main__":
    unittest.main()
