# A local: with -l the watchpoint is on its address; without, it ends with its frame, which
# stops the program there, as GDB's does.
break local_part
run
ulpt watch -l loc
continue
continue
ulpt delete
ulpt watch loc
continue
continue
continue
