"""A judge endpoint that logs what reaches it (tests/engine/test_judge_security.py,
tests/platform/test_judge_platform.py)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERDICT = {"correct": True, "score": 1.0, "reason": "same figure"}


class LoggingServer:
    """An OpenAI-compatible chat endpoint that records every request's path and headers,
    and counts TCP connections (a TLS attempt on it is a connection, never a request).
    `redirect_to` makes it answer 302 to another URL instead."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.connections = 0
        self.redirect_to = ""
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                server.requests.append({"path": self.path, "headers": headers})
                if server.redirect_to:
                    self.send_response(302)
                    self.send_header("Location", server.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                model = json.loads(body or b"{}").get("model", "m")
                message = {"role": "assistant", "content": json.dumps(VERDICT)}
                payload = json.dumps(
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": 0,
                        "model": model,
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            def verify_request(self, request, client_address):
                server.connections += 1
                return True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def authorizations(self) -> list[str]:
        return [r["headers"].get("authorization", "") for r in self.requests]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
