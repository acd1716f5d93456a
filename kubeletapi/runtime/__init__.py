"""Container runtimes: interface, shared types, CRI log files, the process and CRI runtimes."""
