# The program's own action for ulpt-gdb's batches' signal (SIGRTMAX - 7), set after the first
# watchpoints (the second went in a batch): it keeps its handler, and the watchpoints made
# after start by a call each. Every one stops.
break own57
break array
run
ulpt watch -l arr[0]
ulpt watch -l arr[100]
continue
ulpt watch -l arr[200]
ulpt watch -l arr[300]
continue
continue
continue
continue
continue
