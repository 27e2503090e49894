"""End to end: `mkdocs serve` while an author edits prose and proofs."""

import queue
import socket
import subprocess
import threading
import time
import urllib.request

import pytest


class Server:
    def __init__(self, site):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            site.command("serve", "-a", f"127.0.0.1:{self.port}"),
            cwd=site.root, env=site.environment(), stderr=subprocess.STDOUT, stdout=subprocess.PIPE, text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 60) -> list[str]:
        """Log lines up to and including the first that contains ``text``."""
        seen, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            seen.append(line)
            if text in line:
                return seen
        raise AssertionError(f"no log line with {text!r}; saw:\n" + "\n".join(seen))

    def get(self, path: str = "/") -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as response:
            return response.read().decode()

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=20)


@pytest.fixture
def server(site):
    site.proof("p.py", '"""P."""\nvalue = 41\nprint("ok")\n')
    site.page("index.md", "# Home\n\nThe value is [v](../proofs/p.py#value), [above forty](../proofs/p.py#?value > 40)."
                          "\n\n[p.py](../proofs/p.py)\n")
    running = Server(site)
    yield running
    running.stop()


def test_serve_reruns_only_what_changed_and_survives_a_broken_proof(site, server):
    startup = server.wait_for("Serving on")
    assert any("proofs: 1/1 p.py" in line for line in startup)
    assert 'title="value, measured by proofs/p.py">41</a>' in server.get()
    # under serve, the card lists for its author the claims pages make from it (with margins, where they have one)
    assert ('<li class="proof-card__claim proof-card__claim--held"><a href="./#claim-p-1">above forty</a> (Home): '
            "<code>value = 41 &gt; 40</code>, holds</li>") in server.get()

    time.sleep(1)
    site.page("index.md", "# Home\n\nEdited. The value is [v](../proofs/p.py#value).\n\n[p.py](../proofs/p.py)\n")
    rebuild = server.wait_for("proofs: 0 ran, 1 from cache, 0 failed")
    assert not any("proofs: 1/1 p.py" in line and "from cache" not in line for line in rebuild)
    assert "Edited." in server.get()

    time.sleep(1)
    site.proof("p.py", '"""P."""\nvalue = 42\nraise RuntimeError("broken on purpose")\n')
    rebuild = server.wait_for("proofs: 1 ran, 0 from cache, 1 failed")
    assert any("WARNING" in line and "proofs/p.py raised RuntimeError: broken on purpose at line 3" in line
               for line in rebuild)
    page = server.get()
    assert "<strong>This proof failed:</strong>" in page
    assert server.process.poll() is None

    time.sleep(1)
    site.proof("p.py", '"""P."""\nvalue = 43\n')
    server.wait_for("proofs: 1 ran, 0 from cache, 0 failed")
    assert 'title="value, measured by proofs/p.py">43</a>' in server.get()
