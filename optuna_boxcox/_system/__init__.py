"""What the package needs from the operating system and the terminal.

- ``_process``: who owns a trial (host and process), and whether that process still lives;
- ``_parallel``: the one executor spreading work over forked processes;
- ``_progress``: the progress line on a terminal;
- ``_text``: text widths as a terminal shows them;
- ``_stop``: a stop the command was asked for, checked after every fit (a leaf every layer may use).
"""
