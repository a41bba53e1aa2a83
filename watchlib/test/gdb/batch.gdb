# Watchpoints made while the program is stopped start at its resume, in a batch (gdb.c's
# queue): the first in the process by a call, the next ones queued. One the agent cannot
# start (an address past the user address space) is reported at the next stop and deleted;
# the others stop as ever.
break array
run
ulpt watch -l arr[0]
ulpt watch -l *(int *) 0xffff800000000000
ulpt watch -l arr[100]
ulpt watch -l arr[200]
continue
continue
continue
ulpt info watchpoints
continue
