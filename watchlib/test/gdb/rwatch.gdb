# rwatch stops at the read of counter (sink = counter), with its value; awatch stops at
# reads and at writes, with the old and new value after a write that changes it.
break steps
run
ulpt rwatch counter
continue
ulpt delete
ulpt awatch total
continue
continue
