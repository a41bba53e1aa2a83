# Attached with -p to a running program without the agent: ulpt watch loads it (dlopen), stops at the write, and the program runs to its end.
ulpt watch counter
set var go = 1
continue
continue
