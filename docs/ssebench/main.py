"""ssegrade's evaluator in the place of SSEBench's (`/evaluator/main.py` in a task image).

SSEBench's entrypoint runs it (`uv run --no-sync main.py`) once the agent has exited, with
SSE_DAEMON_SOCKET pointing at the daemon's admin socket and the agent's facts in
AGENT_DURATION, AGENT_EXIT_STATUS and SSE_METRIC_AGENT_TIMEOUT. It grades through the daemon
into SSE_RESULTS/result.json, then gives the results folder back to the owner the daemon's
script (ssebench-daemon beside this file) noted.
"""

import os
import subprocess
import sys

results = os.environ.get("SSE_RESULTS", "/var/lib/ssebench/results")
admin = os.environ["SSE_DAEMON_SOCKET"]
done = subprocess.run(["ssegrade", "evaluate", "--daemon", admin], check=False)
owner_file = os.path.join(os.path.dirname(admin), "results-owner")
if os.path.exists(owner_file):
    with open(owner_file) as noted:
        owner = noted.read().strip()
    subprocess.run(["chown", "-R", "-P", "--", owner, results], check=False)
sys.exit(done.returncode)
