"""A port another program holds is one line naming it and the option that changes it (exit 2)."""
import socket
import subprocess
import sys

import pytest
from netns import REPO

CLI = [sys.executable, "-m", "matter_twin.cli"]


def _one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.mark.parametrize("args, option", [(("serve",), "--port"), (("run", "--no-matter", "--duration", "1"), "--http"),
                                          (("mcp",), "--http")])
def test_a_busy_http_port(args, option):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run([*CLI, *args, option, str(port)], capture_output=True, text=True, timeout=300,
                              cwd=REPO)
    line = _one_line(done)
    assert f"cannot listen on 127.0.0.1:{port}" in line and f"choose another with {option} PORT" in line


@pytest.mark.e2e
def test_a_busy_matter_port_names_it_and_base_port(netns, tmp_path):
    holder = netns.popen([sys.executable, "-c", "import socket, time\n"
                          "s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n"
                          "s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)\n"
                          "s.bind(('::', 5541)); print('bound', flush=True); time.sleep(300)"],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "bound"
        done = netns.run([*CLI, "run", "--matter", "--duration", "1", "--storage", str(tmp_path / "s")],
                         check=False, timeout=300, cwd=REPO)
    finally:
        holder.kill()
        holder.wait()
    line = _one_line(done)
    assert "UDP port 5541" in line and "--base-port" in line
