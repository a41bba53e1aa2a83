# A watchpoint made before the program runs goes in once the agent has started, as GDB's own
# do; a second run keeps it.
ulpt watch counter
run
continue
kill
run
