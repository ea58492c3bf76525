"""Numbers and words the agent and the sandbox's own processes share.

A plain module with no imports: launcher.py, server.py and repl.py import it by name from this folder
(they run outside the package), the agent as tools.sandbox.limits.
"""

MAX_PROCESSES = 256  # processes confined code may have at once (a fork bomb meets this, root included)
SUPERVISOR_NICE = -10  # a supervisor's priority where it may raise it (root): above the code it counts
SANDBOX_FAILED = 126  # the exit status when the sandbox could not be set up (the reason on stderr)
STOPPED_NOTE = "sandbox: stopped: the code started more than {} processes at once; every one was killed"
