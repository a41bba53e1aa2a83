# Attached with -p to a running program started with the agent preloaded: ulpt watch works.
ulpt watch counter
set var go = 1
continue
continue
