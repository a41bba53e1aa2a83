# The program's own SIGSEGV handler still works, and a watch stops after it.
break segv
run
ulpt watch counter
continue
continue
continue
