#!/usr/bin/python3
"""A fake of Modal's gRPC API for sandboxd's tests: the control plane (modal.client.ModalClient)
and the per-worker command router (modal.task_command_router.TaskCommandRouter), over h2c with
grpcio, following the wire formats of Modal's protos (the subset in this directory).

"Sandboxes" are directories on this machine and their commands local processes. Auth follows
Modal: x-modal-token-id/x-modal-token-secret on every control-plane call, and
x-modal-auth-token (from AuthTokenGet, a JWT with exp) on every call but AuthTokenGet; the router
wants "authorization: Bearer <jwt>" from TaskGetCommandRouterAccess. Expired or unknown tokens
get UNAUTHENTICATED, as Modal's servers answer.

Failure injection through the control port (fakelib.Control): see INJECTIONS.

Usage: fake_modal.py --token-id ID --token-secret SECRET [--router-url URL]
Prints one line "READY api=PORT router=PORT control=PORT" when serving.
"""
import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakelib  # noqa: E402

api, tcr = fakelib.load_protos()
GR = api.GenericResult

INJECTIONS = {
    "auth_token_ttl": 1200,       # seconds of life of an AuthTokenGet token
    "router_jwt_ttl": 1200,       # seconds of life of a router JWT
    "expire_tokens": 0,           # N: the next N checks treat every issued token as expired
    "cut_stream_after": 0,        # bytes: the next stdio stream fails (UNAVAILABLE) past this
    "image_build_logs": [],       # log lines of a build: ImageGetOrCreate returns no result
    "image_build_error": "",      # the build fails with this exception text
    "task_id_pending": 0,         # N: the next N SandboxGetTaskId answer without a task id
    "unavailable": {},            # {method: N}: the next N calls of method fail UNAVAILABLE
    "create_delay_s": 0,          # a new sandbox exists at once, SandboxCreate answers later
    "list_page": 2,               # SandboxList page size (paging is by before_timestamp)
    "echo_secrets": False,        # error messages repeat the credentials they were sent (a
                                  # careless server): the client must redact them
}


def now():
    return time.time()


def make_jwt(ttl, sub):
    def b64(d):
        return base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
    return "%s.%s.%s" % (b64({"alg": "none", "typ": "JWT"}),
                         b64({"exp": int(now() + ttl), "sub": sub}), secrets.token_hex(16))


class Sandbox:
    def __init__(self, sid, app_id, definition, tags):
        self.id = sid
        self.app_id = app_id
        self.task_id = "ta-" + secrets.token_hex(8)
        self.tags = {t.tag_name: t.tag_value for t in tags}
        self.created_at = now()
        self.root = tempfile.mkdtemp(prefix="fake-modal-sb-")
        self.workdir = definition.workdir if definition.HasField("workdir") else self.root
        os.makedirs(self.workdir, exist_ok=True)
        self.definition = definition
        self.result = None  # GenericResult once finished
        self.execs = {}
        self.files = set()  # what the execs' command lines name below /tmp/.sandboxd

    def terminate(self, status=GR.GENERIC_STATUS_TERMINATED):
        if self.result is None:
            self.result = GR(status=status)
        for p in self.execs.values():
            p.kill()
        fakelib.remove_state_files(self.files)
        shutil.rmtree(self.root, ignore_errors=True)


class Fake:
    def __init__(self, args):
        self.args = args
        self.ctl = fakelib.Control(INJECTIONS)
        self.ctl.state_fn = self.state
        self.lock = threading.Lock()
        self.auth_tokens = {}  # token -> exp
        self.jwts = {}         # jwt -> (task_id, exp)
        self.apps = {}
        self.images = {}
        self.sandboxes = {}
        self.idempotent = {}   # x-idempotency-key of SandboxCreate -> sandbox id
        self.router_url = args.router_url

    def state(self):
        with self.lock:
            return {"last_exec": getattr(self, "last_exec", None), "sandboxes": [{"id": s.id, "tags": s.tags, "task_id": s.task_id,
                                   "running": s.result is None,
                                   "timeout_secs": s.definition.timeout_secs,
                                   "network": s.definition.network_access.network_access_type,
                                   "milli_cpu": s.definition.resources.milli_cpu,
                                   "memory_mb": s.definition.resources.memory_mb,
                                   "execs": len(s.execs)}
                                  for s in self.sandboxes.values()]}

    # ---- auth ----

    def echo(self, md, *keys):
        if not self.ctl.get("echo_secrets"):
            return ""
        return " (got %s)" % ", ".join("%s=%s" % (k, md.get(k)) for k in keys)

    def expired_all(self):
        return self.ctl.take("expire_tokens")

    def check_credentials(self, context, method):
        md = dict(context.invocation_metadata())
        self.ctl.count("calls." + method)
        if not md.get("x-modal-client-version") or not md.get("x-modal-client-type"):
            context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                          "x-modal-client-type and x-modal-client-version are required")
        if (md.get("x-modal-token-id") != self.args.token_id
                or md.get("x-modal-token-secret") != self.args.token_secret):
            self.ctl.count("unauthenticated")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "invalid Modal token credentials" +
                          self.echo(md, "x-modal-token-id", "x-modal-token-secret"))
        n = self.ctl.get("unavailable", {}).get(method, 0)
        if n > 0:
            with self.ctl.lock:
                self.ctl.values["unavailable"] = dict(self.ctl.values["unavailable"],
                                                      **{method: n - 1})
            context.abort(grpc.StatusCode.UNAVAILABLE, "injected: service unavailable")
        if method == "AuthTokenGet":
            return
        tok = md.get("x-modal-auth-token")
        exp = self.auth_tokens.get(tok)
        if exp is None or exp < now() or self.expired_all():
            self.ctl.count("unauthenticated")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "auth token expired or invalid" +
                          self.echo(md, "x-modal-auth-token", "x-modal-token-secret"))

    def check_jwt(self, context, task_id, method):
        self.ctl.count("calls." + method)
        auth = dict(context.invocation_metadata()).get("authorization", "")
        entry = self.jwts.get(auth[7:]) if auth.startswith("Bearer ") else None
        if entry is None or entry[1] < now() or entry[0] != task_id or self.expired_all():
            self.ctl.count("unauthenticated")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "router token expired or invalid" +
                          self.echo({"jwt": auth[7:]}, "jwt"))

    # ---- control plane ----

    def AuthTokenGet(self, req, context):
        self.check_credentials(context, "AuthTokenGet")
        tok = make_jwt(self.ctl.get("auth_token_ttl"), "client")
        self.auth_tokens[tok] = now() + self.ctl.get("auth_token_ttl")
        return api.AuthTokenGetResponse(token=tok)

    def AppGetOrCreate(self, req, context):
        self.check_credentials(context, "AppGetOrCreate")
        if not req.app_name or req.object_creation_type != api.OBJECT_CREATION_TYPE_CREATE_IF_MISSING:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "app_name and CREATE_IF_MISSING")
        with self.lock:
            key = (req.app_name, req.environment_name)
            self.apps.setdefault(key, "ap-" + secrets.token_hex(6))
            return api.AppGetOrCreateResponse(app_id=self.apps[key])

    def ImageGetOrCreate(self, req, context):
        self.check_credentials(context, "ImageGetOrCreate")
        cmds = list(req.image.dockerfile_commands)
        if not cmds or not cmds[0].startswith("FROM "):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "dockerfile_commands needs FROM")
        iid = "im-" + secrets.token_hex(6)
        logs = list(self.ctl.get("image_build_logs"))
        self.images[iid] = {"logs": logs, "error": self.ctl.get("image_build_error"),
                            "tag": cmds[0][5:]}
        if logs or self.images[iid]["error"]:
            return api.ImageGetOrCreateResponse(image_id=iid)
        return api.ImageGetOrCreateResponse(image_id=iid,
                                            result=GR(status=GR.GENERIC_STATUS_SUCCESS))

    def ImageJoinStreaming(self, req, context):
        self.check_credentials(context, "ImageJoinStreaming")
        img = self.images.get(req.image_id)
        if img is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "no such image")
        start = int(req.last_entry_id or "0")
        for i, line in enumerate(img["logs"][start:], start + 1):
            yield api.ImageJoinStreamingResponse(task_logs=[api.TaskLogs(data=line + "\n")],
                                                 entry_id=str(i))
        if img["error"]:
            res = GR(status=GR.GENERIC_STATUS_FAILURE, exception=img["error"])
        else:
            res = GR(status=GR.GENERIC_STATUS_SUCCESS)
        yield api.ImageJoinStreamingResponse(result=res, eof=True)

    def SandboxCreate(self, req, context):
        self.check_credentials(context, "SandboxCreate")
        key = dict(context.invocation_metadata()).get("x-idempotency-key")
        with self.lock:
            if key and key in self.idempotent:
                return api.SandboxCreateResponse(sandbox_id=self.idempotent[key])
            if not req.definition.image_id.startswith("im-"):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "definition.image_id")
            sid = "sb-" + secrets.token_hex(8)
            self.sandboxes[sid] = Sandbox(sid, req.app_id, req.definition, req.tags)
            if key:
                self.idempotent[key] = sid
        time.sleep(self.ctl.get("create_delay_s"))
        return api.SandboxCreateResponse(sandbox_id=sid)

    def sandbox(self, context, sid):
        sb = self.sandboxes.get(sid)
        if sb is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "Sandbox %s not found" % sid)
        return sb

    def SandboxGetTaskId(self, req, context):
        self.check_credentials(context, "SandboxGetTaskId")
        sb = self.sandbox(context, req.sandbox_id)
        if sb.result is not None:
            return api.SandboxGetTaskIdResponse(task_result=sb.result)
        if self.ctl.take("task_id_pending"):
            return api.SandboxGetTaskIdResponse()
        return api.SandboxGetTaskIdResponse(task_id=sb.task_id)

    def TaskGetCommandRouterAccess(self, req, context):
        self.check_credentials(context, "TaskGetCommandRouterAccess")
        if not any(s.task_id == req.task_id and s.result is None
                   for s in self.sandboxes.values()):
            context.abort(grpc.StatusCode.NOT_FOUND, "task not found or finished")
        jwt = make_jwt(self.ctl.get("router_jwt_ttl"), req.task_id)
        self.jwts[jwt] = (req.task_id, now() + self.ctl.get("router_jwt_ttl"))
        return api.TaskGetCommandRouterAccessResponse(jwt=jwt, url=self.router_url)

    def SandboxWait(self, req, context):
        self.check_credentials(context, "SandboxWait")
        sb = self.sandbox(context, req.sandbox_id)
        deadline = now() + min(req.timeout, 55)
        while sb.result is None and now() < deadline:
            time.sleep(0.05)
        return api.SandboxWaitResponse(result=sb.result) if sb.result else api.SandboxWaitResponse()

    def SandboxTerminate(self, req, context):
        self.check_credentials(context, "SandboxTerminate")
        sb = self.sandbox(context, req.sandbox_id)
        existing = sb.result
        sb.terminate()
        if existing is not None:
            return api.SandboxTerminateResponse(existing_result=existing)
        return api.SandboxTerminateResponse()

    def SandboxList(self, req, context):
        self.check_credentials(context, "SandboxList")
        want = {t.tag_name: t.tag_value for t in req.tags}
        with self.lock:
            found = [s for s in self.sandboxes.values()
                     if s.app_id == req.app_id and (req.include_finished or s.result is None)
                     and all(s.tags.get(k) == v for k, v in want.items())
                     and (not req.before_timestamp or s.created_at < req.before_timestamp)]
        found.sort(key=lambda s: -s.created_at)
        page = found[:self.ctl.get("list_page")]
        return api.SandboxListResponse(sandboxes=[
            api.SandboxInfo(id=s.id, created_at=s.created_at, app_id=s.app_id,
                            tags=[api.SandboxTag(tag_name=k, tag_value=v)
                                  for k, v in s.tags.items()]) for s in page])

    # ---- command router ----

    def task_exec(self, context, task_id, exec_id):
        for sb in self.sandboxes.values():
            if sb.task_id == task_id:
                if sb.result is not None:
                    context.abort(grpc.StatusCode.FAILED_PRECONDITION, "task has finished")
                p = sb.execs.get(exec_id)
                if exec_id is not None and p is None:
                    context.abort(grpc.StatusCode.NOT_FOUND, "exec %s not found" % exec_id)
                return sb, p
        context.abort(grpc.StatusCode.NOT_FOUND, "task %s not found" % task_id)

    def TaskExecStart(self, req, context):
        self.check_jwt(context, req.task_id, "TaskExecStart")
        sb, _ = self.task_exec(context, req.task_id, None)
        with self.lock:
            if req.exec_id in sb.execs:  # idempotent by exec id
                return tcr.TaskExecStartResponse()
            cwd = req.workdir if req.HasField("workdir") else sb.workdir
            if not os.path.isdir(cwd):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              "workdir %s does not exist" % cwd)
            merge = req.stderr_config == tcr.TASK_EXEC_STDERR_CONFIG_STDOUT
            self.last_exec = {"args": list(req.command_args), "env": dict(req.env),
                              "workdir": req.workdir if req.HasField("workdir") else None,
                              "stderr_config": req.stderr_config}
            try:
                p = fakelib.LocalProcess(list(req.command_args), cwd, dict(req.env), merge)
            except OSError as e:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "cannot run: %s" % e)
            sb.execs[req.exec_id] = p
            sb.files |= fakelib.state_files(" ".join(req.command_args))
        if req.HasField("timeout_secs") and req.timeout_secs:
            t = threading.Timer(req.timeout_secs, p.kill)
            t.daemon = True
            t.start()
        return tcr.TaskExecStartResponse()

    def TaskExecStdioRead(self, req, context):
        self.check_jwt(context, req.task_id, "TaskExecStdioRead")
        _, p = self.task_exec(context, req.task_id, req.exec_id)
        fd = 2 if req.file_descriptor == tcr.TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR else 1
        offset, sent = req.offset, 0
        cut = self.ctl.get("cut_stream_after")
        while context.is_active():
            data, ended = p.read_from(fd, offset, 1.0)
            if data:
                if cut and sent + len(data) > cut:
                    data = data[:max(1, cut - sent)]
                yield tcr.TaskExecStdioReadResponse(data=data)
                offset += len(data)
                sent += len(data)
                if cut and sent >= cut:
                    with self.ctl.lock:
                        self.ctl.values["cut_stream_after"] = 0
                    self.ctl.count("streams_cut")
                    context.abort(grpc.StatusCode.UNAVAILABLE, "injected: stream cut")
            elif ended:
                return

    def TaskExecStdinWrite(self, req, context):
        self.check_jwt(context, req.task_id, "TaskExecStdinWrite")
        _, p = self.task_exec(context, req.task_id, req.exec_id)
        if not p.write_stdin(req.offset, req.data, req.eof):
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "stdin closed or offset gap")
        self.ctl.count("stdin_bytes", len(req.data))
        return tcr.TaskExecStdinWriteResponse()

    def TaskExecWait(self, req, context):
        self.check_jwt(context, req.task_id, "TaskExecWait")
        _, p = self.task_exec(context, req.task_id, req.exec_id)
        left = context.time_remaining()
        if not p.wait(min(left - 0.5, 55) if left is not None else 55):
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "still running")
        if p.exit_signal is not None:
            return tcr.TaskExecWaitResponse(signal=p.exit_signal)
        return tcr.TaskExecWaitResponse(code=p.exit_code)


def handlers(fake, service, module, methods):
    table = {}
    for name, streaming in methods:
        req = getattr(module, name + "Request")
        resp = getattr(module, name + "Response")
        make = grpc.unary_stream_rpc_method_handler if streaming else \
            grpc.unary_unary_rpc_method_handler
        table[name] = make(getattr(fake, name), request_deserializer=req.FromString,
                           response_serializer=resp.SerializeToString)
    return grpc.method_handlers_generic_handler(service, table)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--token-id", required=True)
    ap.add_argument("--token-secret", required=True)
    ap.add_argument("--router-url", default=None)
    args = ap.parse_args()
    pool = futures.ThreadPoolExecutor(max_workers=64)
    api_srv = grpc.server(pool)
    router_srv = grpc.server(pool)
    api_port = api_srv.add_insecure_port("127.0.0.1:0")
    router_port = router_srv.add_insecure_port("127.0.0.1:0")
    if args.router_url is None:
        args.router_url = "http://127.0.0.1:%d" % router_port
    fake = Fake(args)
    api_srv.add_generic_rpc_handlers([handlers(fake, "modal.client.ModalClient", api, [
        ("AuthTokenGet", False), ("AppGetOrCreate", False), ("ImageGetOrCreate", False),
        ("ImageJoinStreaming", True), ("SandboxCreate", False), ("SandboxGetTaskId", False),
        ("SandboxList", False), ("SandboxTerminate", False), ("SandboxWait", False),
        ("TaskGetCommandRouterAccess", False)])])
    router_srv.add_generic_rpc_handlers([handlers(
        fake, "modal.task_command_router.TaskCommandRouter", tcr, [
            ("TaskExecStart", False), ("TaskExecStdioRead", True), ("TaskExecStdinWrite", False),
            ("TaskExecWait", False)])])
    api_srv.start()
    router_srv.start()
    control_port = fake.ctl.serve()
    print("READY api=%d router=%d control=%d" % (api_port, router_port, control_port),
          flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    fakelib.serve_until_stopped(stop)
    for sb in list(fake.sandboxes.values()):
        sb.terminate()
    api_srv.stop(0)
    router_srv.stop(0)


if __name__ == "__main__":
    main()
