"""How long a test waits for a condition, or for a process it started, before it calls it stuck.

Generous on purpose: a loaded machine (two suites side by side on two cores) is slow, not stuck, and a test that
returns as soon as its condition holds loses nothing by a long deadline. Seen on such a machine: a Python child that
imports Ballast's service modules took more than 30 s to start and exit.
"""

WAIT_S = 180.0
