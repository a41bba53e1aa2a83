# A program whose thread blocks the batches' signal (SIGRTMAX - 7): ulpt watch starts each
# watchpoint by a call (no batch: the signal would wait), and the stops are the same.
break array
run
ulpt watch -l arr[0]
ulpt watch -l arr[100]
ulpt watch -l arr[200]
continue
continue
continue
continue
