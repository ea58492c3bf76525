"""What one task's run is made of and yields (outcome/task.py): the agent's events, its steps, the usage summed
over its model calls, the result and the statuses it ends with. agent.py fills them; run/, telemetry/, research/
and ui/ read them (through `agent`, which re-exports them).

May import core and sources; only agent.py and the layers above import it.
"""
