# More watchpoints than the batch's queue holds (4,096): the full queue is started by a call, the
# rest at the resume, whose knock opens the door: every hit stops through it (on ULPT).
break array
run
set $i = 0
while $i < 4200
  ulpt watch -l by_thread[$i % 2]
  set $i = $i + 1
end
ulpt watch -l arr[100]
ulpt watch -l arr[200]
continue
continue
print ulpt_gdb_door.on
maint info breakpoints
