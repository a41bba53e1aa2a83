# 1,000 watchpoints, one per element of arr: exactly the 10 elements written stop, in order,
# each with its own number, expression and values.
break array
run
python
for i in range(1000):
    gdb.execute("ulpt watch -l arr[%d]" % i, to_string=True)
end
set $n = 0
while $n < 10
  continue
  set $n = $n + 1
end
ulpt info watchpoints 2-4
continue
