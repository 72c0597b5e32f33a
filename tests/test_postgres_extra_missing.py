"""Without psycopg (the [postgres] extra) a postgresql:// target is a one-line error."""
import subprocess
import sys

SCRIPT = """
import sys
sys.modules["psycopg"] = None          # as if the extra were not installed
sys.argv = ["memwatch-overlay", "audit", "postgresql://bot:s3cret@127.0.0.1:1/agent"]
from memwatch_overlay.overlay.cli.main import main
main()
"""


def test_postgres_target_without_psycopg_says_which_extra():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "s3cret" not in proc.stderr
    assert proc.stderr.startswith("Error: ") and "[postgres] extra" in proc.stderr.splitlines()[0]
