"""What `make test` cannot run here, said before the tests and again after them, impossible to miss.

``python tests/skips.py start`` names what this machine lacks and so what will skip (root installs Java with
the cluster's Ansible and Chromium with ``make browser``, and makes network namespaces); ``python tests/skips.py
end LOG`` counts the skips tests/conftest.py listed in LOG, by reason. A developer's run may skip and pass;
CI's (SKEWBENCH_NO_SKIP=1) fails every skip but the opt-in cloud tests', and ``end`` fails too if one got by.
"""

import os
import shutil
import sys
from collections import Counter
from pathlib import Path

RULE = "=" * 110
HOW = "CI runs every one of them: SKEWBENCH_NO_SKIP=1 fails a skip"


def lacking() -> list[str]:
    """What this machine lacks for the tests, each with what it skips and how to get it."""
    found = []
    if os.geteuid() != 0:
        found.append("not root: tests/infra's network-namespace cluster and link-emulator tests skip "
                     "(run as root: sudo make test)")
        if not shutil.which("java"):
            found.append("Java is missing and only root installs it here: the cluster tests (tests/spark, the "
                         "cluster lifecycles of tests/infra) skip; sudo apt-get install openjdk-17-jre-headless")
        if not (shutil.which("chromium") and shutil.which("chromedriver")):
            found.append("Chromium is missing and only root installs it here: the browser tests of "
                         "tests/test_html_report.py skip; sudo make browser")
    if not shutil.which("terraform"):
        found.append("terraform is missing: tests/infra/test_static.py's Terraform checks skip; install terraform "
                     "(https://developer.hashicorp.com/terraform/install)")
    return found


def start() -> int:
    found = lacking()
    if found:
        print("\n".join([RULE, "make test: this machine cannot run every test:", *(f"  - {f}" for f in found),
                         f"  {HOW}.", RULE]), flush=True)
    return 0


def end(log: Path) -> int:
    """The skips by reason, loud; 1 when SKEWBENCH_NO_SKIP=1 and a skip got by all the same."""
    rows = [line.split("\t") for line in (log.read_text().splitlines() if log.exists() else [])]
    reasons = Counter(reason for kind, reason, _ in rows if kind == "skip")
    opt_in = sum(kind == "opt-in" for kind, _, _ in rows)
    quiet = f" ({opt_in} opt-in cloud test{'s' * (opt_in != 1)} not asked for: SKEWBENCH_CLOUD_TESTS=1)" * bool(opt_in)
    if not reasons:
        print(f"make test: no test skipped{quiet}")
        return 0
    total = sum(reasons.values())
    print("\n".join([RULE, f"make test: {total} test{'s' * (total != 1)} SKIPPED: this run proves less than CI's "
                           f"({HOW}):",
                     *(f"  {n:5}  {reason}" for reason, n in reasons.most_common()),
                     f"  each test: {log}{quiet}", RULE]))
    return 1 if os.environ.get("SKEWBENCH_NO_SKIP") == "1" else 0


if __name__ == "__main__":
    sys.exit(start() if sys.argv[1:] == ["start"] else end(Path(sys.argv[2])))
